"""Checklist items 8 and 9: groups and talk passwords."""

from __future__ import annotations

import pytest

import nixmsg
from helpers import Clients, Harness, by_id


def _code(err: pytest.ExceptionInfo[nixmsg.NixMsgError]) -> str:
    return err.value.code


def test_checklist_08_group_members_receive_sender_does_not(harness: Harness, clients: Clients) -> None:
    ea, eb, ec = harness.endpoint(), harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    c = clients.online(harness.ws_url, ec, nixmsg.ConnectOptions(transport="tcp"))
    created = a.client.groups.create("floor 1", [eb.id, nixmsg.GroupMemberInput(ec.id)])
    assert created.group_id.startswith("g_")
    assert created.failed == []
    group = a.client.groups.get(created.group_id)
    assert group.owner_id == ea.id
    assert group.member_count == 3
    assert sorted(m.id for m in group.members) == sorted([ea.id, eb.id, ec.id])
    mine = b.client.groups.list()
    assert any(g.id == created.group_id for g in mine.items)

    sent = a.client.send(nixmsg.Target.group(created.group_id), "to everyone")
    for t in (b, c):
        m = t.messages.wait_for(by_id(sent.id), "a member's copy")
        assert m.body == "to everyone"
        assert m.sender == ea.id
        assert m.to == nixmsg.Target("group", created.group_id)
    a.receipts.wait_count(2, lambda r: r.id == sent.id and r.state == "accepted", "two receipts")
    # A message from B to A after the group message: A would have got the group message first.
    marker = b.client.send(ea.id, "marker")
    a.messages.wait_for(by_id(marker.id), "the marker")
    assert a.messages.count(by_id(sent.id)) == 0, "the sender does not receive its own"
    assert b.messages.count(by_id(sent.id)) == 1
    assert c.messages.count(by_id(sent.id)) == 1


def test_checklist_09_talk_passwords(harness: Harness, clients: Clients) -> None:
    ea, eb, ec = harness.endpoint(), harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    c = clients.online(harness.ws_url, ec)
    b.client.set_talk_password("talk-1")
    assert b.client.get_self().talk_password_set is True

    with pytest.raises(nixmsg.NixMsgError) as e1:
        a.client.send(eb.id, "no password")
    assert _code(e1) == "talk_password_required"
    with pytest.raises(nixmsg.NixMsgError) as e2:
        a.client.send(eb.id, "wrong", talk_password="nope")
    assert _code(e2) == "talk_password_invalid"
    with pytest.raises(nixmsg.NixMsgError) as e3:
        a.client.unlock(eb.id, "nope")
    assert _code(e3) == "talk_password_invalid"
    a.client.unlock(eb.id, "talk-1")
    ok = a.client.send(eb.id, "after unlock")
    b.messages.wait_for(by_id(ok.id), "the unlocked message")

    # A new talk password voids earlier grants.
    b.client.set_talk_password("talk-2")
    with pytest.raises(nixmsg.NixMsgError) as e4:
        a.client.send(eb.id, "stale grant")
    assert _code(e4) == "talk_password_required"
    with_pw = a.client.send(eb.id, "with the new password", talk_password="talk-2")
    b.messages.wait_for(by_id(with_pw.id), "the message with the password")

    # B writes to C first: C may answer without B's talk password.
    with pytest.raises(nixmsg.NixMsgError) as e5:
        c.client.send(eb.id, "cold")
    assert _code(e5) == "talk_password_required"
    first = b.client.send(ec.id, "hello C")
    c.messages.wait_for(by_id(first.id), "B's message")
    reply = c.client.send(eb.id, "reply to B")
    b.messages.wait_for(by_id(reply.id), "C's reply")
