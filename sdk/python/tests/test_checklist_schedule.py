"""Checklist items 5, 6 and 7: recall within a delay, scheduled sends, kept messages."""

from __future__ import annotations

import datetime
import time

from helpers import Clients, Harness, by_id


def test_checklist_05_recall_within_10_s_delay(harness: Harness, clients: Clients) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    recalled = a.client.send(eb.id, "recall me", delay=10_000)
    # Due no earlier than the recalled one: it would have been pushed first (spec 7.5 order).
    marker = a.client.send(eb.id, "marker", delay=10_000)
    assert recalled.state == "scheduled"
    r = a.client.recall(recalled.id)
    assert (r.result, r.recalled, r.accepted, r.other) == ("recalled", 0, 0, 0)
    status = a.client.status(recalled.id)
    assert status.state == "completed"
    assert status.reason == "recalled"
    b.messages.wait_for(by_id(marker.id), "the marker after its delay", 20)
    assert b.messages.count(by_id(recalled.id)) == 0, "no callback for the recalled message"
    assert a.receipts.count(lambda x: x.id == recalled.id) == 0, "a recall sends no receipt"


def test_checklist_06_scheduled_2_s_ahead(harness: Harness, clients: Clients) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    sent = a.client.send(eb.id, "at time", send_at=at)
    assert sent.state == "scheduled"
    expected = at.timestamp() * 1000 + a.client.clock_offset_ms
    assert abs(sent.send_at_ms - expected) <= 1, "send_at converted with the clock offset"
    got = b.messages.wait_for(by_id(sent.id), "the scheduled message", 10)
    arrived = b.client.server_now()
    assert got.send_at_ms == sent.send_at_ms
    assert arrived >= sent.send_at_ms - 100, f"arrived {sent.send_at_ms - arrived} ms early"
    assert arrived <= sent.send_at_ms + 3000, "arrived late"


def test_checklist_07_kept_for_offline_recipient_expired_never_arrives(
    harness: Harness, clients: Clients
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    # B is offline. A message that is not kept is dropped; a kept one waits.
    dropped = a.client.send(eb.id, "not kept")
    kept = a.client.send(eb.id, "kept", keep=True, ttl=60)
    short_lived = a.client.send(eb.id, "kept 1 s", keep=True, ttl=1)
    d = a.receipts.wait_for(lambda r: r.id == dropped.id, "the dropped receipt")
    assert d.state == "dropped"
    started = time.monotonic()
    e = a.receipts.wait_for(lambda r: r.id == short_lived.id, "the expired receipt", 10)
    assert e.state == "expired"
    assert e.endpoint_id == eb.id
    assert time.monotonic() - started < 10

    # B comes online later: it gets the kept message, not the dropped or the expired one.
    b = clients.online(harness.ws_url, eb)
    got = b.messages.wait_for(by_id(kept.id), "the kept message")
    assert got.body == "kept"
    marker = a.client.send(eb.id, "marker")
    b.messages.wait_for(by_id(marker.id), "the marker")
    assert b.messages.count(by_id(dropped.id)) == 0
    assert b.messages.count(by_id(short_lived.id)) == 0
    accepted = a.receipts.wait_for(lambda r: r.id == kept.id, "the kept receipt")
    assert accepted.state == "accepted"
