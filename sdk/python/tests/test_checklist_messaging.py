"""Checklist items 2, 3, 4 and 11: one-to-one messages, sends across a disconnect, resends and
lost acks, and the local size limit."""

from __future__ import annotations

import pytest

import nixmsg
from helpers import Clients, Harness, Proxy, by_id

TCP = nixmsg.ConnectOptions(transport="tcp")


def test_checklist_02_one_to_one_message_delivered_once(harness: Harness, clients: Clients) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb, TCP)
    sent = a.client.send(eb.id, "你好 <b>&", meta={"k": "v"})
    assert len(sent.id) == 36
    assert sent.state == "dispatched"
    got = b.messages.wait_for(by_id(sent.id), "the message")
    assert got.body == "你好 <b>&"
    assert got.sender == ea.id
    assert got.to == nixmsg.Target("endpoint", eb.id)
    assert got.meta == {"k": "v"}
    assert got.send_at_ms == sent.send_at_ms
    receipt = a.receipts.wait_for(lambda r: r.id == sent.id, "the receipt")
    assert receipt.state == "accepted"
    assert receipt.endpoint_id == eb.id

    data = bytes([0, 1, 2, 253, 254, 255])
    binary = a.client.send(eb.id, data, content_type="application/x-test")
    got_bin = b.messages.wait_for(by_id(binary.id), "the binary message")
    assert got_bin.body == data
    assert got_bin.content_type == "application/x-test"
    assert b.messages.count(by_id(sent.id)) == 1, "the callback ran once"


def test_checklist_03_send_while_disconnected_delivered_once(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(f"ws://{proxy.address}/mqtt", ea)
    b = clients.online(harness.ws_url, eb)
    proxy.refuse = True
    proxy.cut()
    a.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
    pending = a.client.send_nowait(eb.id, "sent while offline", keep=True)
    assert b.messages.count() == 0
    proxy.refuse = False
    sent = pending.result(30)
    a.states.wait_count(2, lambda s: s.state == "online", "online again")
    b.messages.wait_for(by_id(sent.id), "the queued message")
    marker = a.client.send(eb.id, "marker")
    b.messages.wait_for(by_id(marker.id), "the marker")
    assert b.messages.count(by_id(sent.id)) == 1, "delivered once"
    assert b.messages.count() == 2


def test_checklist_04a_lost_response_resent_with_same_id(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(f"ws://{proxy.address}/mqtt", ea)
    b = clients.online(harness.ws_url, eb)
    proxy.hold_down = True  # the server commits the send, its resp never reaches A
    pending = a.client.send_nowait(eb.id, "resp lost", keep=True)
    got = b.messages.wait_for(lambda m: m.body == "resp lost", "the message")
    proxy.cut()
    proxy.hold_down = False
    sent = pending.result(30)  # resent after the reconnect; the server answers the original
    assert sent.id == got.id, "the same message id"
    marker = a.client.send(eb.id, "marker")
    b.messages.wait_for(by_id(marker.id), "the marker")
    assert b.messages.count(by_id(sent.id)) == 1, "delivered once"
    status = a.client.status(sent.id)
    assert len(status.items) == 1, "one delivery"
    assert status.items[0].endpoint_id == eb.id


def test_checklist_04b_lost_ack_re_acked_without_second_callback(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(f"ws://{proxy.address}/mqtt", eb)
    calls: list[str] = []

    def cut_first(msg: nixmsg.Message) -> None:
        # The connection dies while the application handles the message: its ack is lost.
        calls.append(msg.id)
        if len(calls) == 1:
            proxy.cut()

    b.client.on_message(cut_first)
    sent = a.client.send(eb.id, "ack lost", keep=True)
    b.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
    receipt = a.receipts.wait_for(lambda r: r.id == sent.id, "the receipt")
    assert receipt.state == "accepted", "the re-ack reached the server"
    assert calls == [sent.id], "the application saw the message once"
    assert b.messages.count(by_id(sent.id)) == 1


def test_checklist_11_over_256_kib_fails_locally(harness: Harness, clients: Clients) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    for body in (bytes(262_145), "x" * 262_145):
        with pytest.raises(nixmsg.LimitError) as too_large:
            a.client.send(eb.id, body)
        assert too_large.value.code == "body_too_large"
    with pytest.raises(nixmsg.NixMsgError) as frame:
        a.client.send(eb.id, "\x01" * 262_144)
    assert frame.value.code == "frame_too_large"
    assert a.client.state == "online", "nothing was published, the connection stays"
    big = bytes(i % 256 for i in range(262_144))
    sent = a.client.send(eb.id, big)
    got = b.messages.wait_for(by_id(sent.id), "the 256 KiB message")
    assert got.body == big
    assert a.states.count(lambda s: s.state == "reconnecting") == 0
