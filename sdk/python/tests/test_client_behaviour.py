"""Behaviour of spec 9 beyond the checklist, mirroring sdk/ts/test/integration/server_events:
fatal frames, admin kicks, manual acks and revoked, rate limiting, presence, the directory,
groups, callbacks that call the client, and close on a stalled connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import nixmsg
from helpers import NO_RECONNECT_WINDOW, WAIT, Clients, Events, Harness, Proxy, by_id

MANUAL = nixmsg.ConnectOptions(ack_mode="manual")


def test_fatal_endpoint_disabled_stops_the_client_without_reconnect(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ep = harness.endpoint()
    a = clients.online(f"ws://{proxy.address}/mqtt", ep)
    r = harness.command(
        {"cmd": "admin", "method": "PATCH", "path": f"/api/admin/endpoints/{ep.id}", "body": {"enabled": False}}
    )
    assert r["status"] == 200
    ev = a.states.wait_for(lambda s: s.state == "kicked", "kicked")
    assert ev.reason == "disabled"
    with pytest.raises(nixmsg.StoppedError) as err:
        a.client.send(ep.id, "x")
    assert err.value.code == "kicked"
    proxy.accepted.expect_none(lambda _: True, "a reconnect after fatal", NO_RECONNECT_WINDOW)


def test_admin_kick_only_disconnects_and_the_sdk_reconnects_with_its_token(
    harness: Harness, clients: Clients
) -> None:
    ep = harness.endpoint()
    a = clients.online(harness.ws_url, ep)
    r = harness.command({"cmd": "admin", "method": "POST", "path": f"/api/admin/endpoints/{ep.id}/kick"})
    assert r["status"] == 200
    a.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
    a.states.wait_count(2, lambda s: s.state == "online", "online again")
    assert a.sessions.count() == 1, "reconnected with the token"
    assert a.client.get_self().id == ep.id


def test_manual_mode_recalled_unacked_message_is_revoked_and_not_acked(
    harness: Harness, clients: Clients
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb, MANUAL)
    sent = a.client.send(eb.id, "recall after push", keep=True)
    got = b.messages.wait_for(by_id(sent.id), "the message")
    assert a.client.recall(sent.id).result == "recalled"
    rev = b.revoked.wait_for(lambda x: x.id == sent.id, "revoked")
    assert rev == nixmsg.Revoked(sent.id, ea.id, "recalled")
    b.client.ack(got)  # too late: not sent
    kept = a.client.send(eb.id, "acked by hand", keep=True)
    m2 = b.messages.wait_for(by_id(kept.id), "the second message")
    b.client.ack(m2)
    receipt = a.receipts.wait_for(lambda x: x.id == kept.id, "receipt")
    assert receipt.state == "accepted"
    assert a.receipts.count(lambda x: x.id == sent.id) == 0, "a recall has no receipt"


def test_manual_mode_ack_after_the_server_dropped_the_delivery_counts_as_revoked(
    harness: Harness, clients: Clients
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb, MANUAL)
    sent = a.client.send(eb.id, "ack me late")  # not kept: dropped after the 2 s ack timeout
    got = b.messages.wait_for(by_id(sent.id), "the message")
    dropped = a.receipts.wait_for(lambda x: x.id == sent.id, "the dropped receipt", 10)
    assert dropped.state == "dropped"
    b.revoked.wait_for(lambda x: x.id == sent.id, "revoked")
    b.client.ack(got)
    assert b.revoked.count(lambda x: x.id == sent.id) == 1


def test_sends_beyond_the_rate_limit_are_retried_and_arrive_once(
    harness: Harness, clients: Clients
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    n = 250  # the bucket holds 100 and refills 50/s
    futures = [a.client.send_nowait(eb.id, f"n{i}", receipt=False) for i in range(n)]
    results = [f.result(60) for f in futures]
    assert len({r.id for r in results}) == n
    b.messages.wait_count(n, lambda _: True, f"{n} messages", 30)
    assert len({m.body for m in b.messages.snapshot()}) == n, "each once"


def test_presence_directory_and_notices_watched_again_after_a_reconnect(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(name="Alpha"), harness.endpoint(name="Beta")
    a = clients.online(f"ws://{proxy.address}/mqtt", ea)
    presence: Events[nixmsg.PresenceEvent] = Events()
    a.client.on_presence(presence.push)
    a.client.watch_presence([eb.id])
    b = clients.online(harness.ws_url, eb)
    on = presence.wait_for(lambda p: p.id == eb.id and p.online, "B online")
    assert on.at_ms > 0
    pa, pb, pn = a.client.presence([ea.id, eb.id, "nobody-here"])
    assert pa.online and pb.online and pb.since_ms is not None
    assert pn.not_found
    page = a.client.directory("", "beta")
    assert any(e.id == eb.id and e.name == "Beta" and e.online for e in page.items)
    b.client.close()
    presence.wait_for(lambda p: p.id == eb.id and not p.online, "B offline")

    # The server forgets the watch with the connection; the SDK sends it again.
    proxy.cut()
    a.states.wait_count(2, lambda s: s.state == "online", "A online again")
    a.client.get_self()  # the re-sent watch was handled before this request
    clients.online(harness.ws_url, eb)
    presence.wait_count(2, lambda p: p.id == eb.id and p.online, "B online, seen again")

    a.client.update_self(name="Alpha 2", default_delay_ms=0)
    me = a.client.get_self()
    assert (me.name, me.default_delay_ms, me.source) == ("Alpha 2", 0, "admin")
    assert me.created_at_ms > 0


def test_group_operations_and_group_events(harness: Harness, clients: Clients) -> None:
    ea, eb, ec = harness.endpoint(), harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    c = clients.online(harness.ws_url, ec)
    events: Events[nixmsg.GroupEvent] = Events()
    b.client.on_group_event(events.push)
    gid = f"g_py{int(time.time() * 1000) % 100000}"
    created = a.client.groups.create("floor", [eb.id], id=gid)
    assert (created.group_id, created.added, created.failed) == (gid, [eb.id], [])
    with pytest.raises(nixmsg.ServerError) as taken:
        a.client.groups.create("again", [], id=gid)
    assert taken.value.code == "id_taken"
    missing = a.client.groups.add(gid, [ec.id, "nobody-here"])
    assert missing.added == [ec.id]
    assert [(f.id, f.code) for f in missing.failed] == [("nobody-here", "invalid_target")]
    events.wait_for(lambda e: e.event == "member_added" and e.endpoint_id == ec.id, "C added")
    a.client.groups.rename(gid, "floor 2")
    events.wait_for(lambda e: e.event == "renamed", "renamed")
    with pytest.raises(nixmsg.ServerError) as owner:
        a.client.groups.leave(gid)
    assert owner.value.code == "owner_cannot_leave"
    a.client.groups.transfer(gid, eb.id)
    events.wait_for(lambda e: e.event == "owner_changed", "owner changed")
    a.client.groups.leave(gid)
    b.client.groups.remove(gid, ec.id)
    g = b.client.groups.get(gid)
    assert (g.name, g.owner_id, g.member_count) == ("floor 2", eb.id, 1)
    with pytest.raises(nixmsg.ServerError) as not_member:
        c.client.groups.get(gid)
    assert not_member.value.code == "not_member"
    b.client.groups.dissolve(gid)
    ev = events.wait_for(lambda e: e.event == "dissolved", "dissolved")
    assert ev.group_id == gid and ev.at_ms > 0
    assert all(x.id != gid for x in b.client.groups.list().items)


def test_callbacks_run_serially_on_one_thread_and_may_call_the_client(
    harness: Harness, clients: Clients
) -> None:
    import threading

    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb)
    threads: set[str] = set()
    active = []
    overlaps = []

    def echo(msg: nixmsg.Message) -> None:
        active.append(1)
        if len(active) > 1:
            overlaps.append(msg.id)
        threads.add(threading.current_thread().name)
        b.client.ready(timeout=WAIT)  # does not wait for the callback thread
        b.client.send(msg.sender, f"echo: {msg.text}")
        active.pop()

    b.client.on_message(echo)
    sent = [a.client.send(eb.id, f"m{i}") for i in range(5)]
    a.messages.wait_count(5, lambda m: m.text.startswith("echo: "), "five echoes")
    assert [m.body for m in a.messages.snapshot()] == [f"echo: m{i}" for i in range(5)], "in order"
    assert overlaps == [] and len(threads) == 1 and sent


def test_callback_errors_go_to_on_callback_error_and_leave_the_message_unacked(
    harness: Harness, clients: Clients
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    errors: Events[BaseException] = Events()
    a = clients.online(harness.ws_url, ea)
    b = clients.online(harness.ws_url, eb, nixmsg.ConnectOptions(on_callback_error=errors.push))

    def fail(_: nixmsg.Message) -> None:
        raise RuntimeError("application bug")

    b.client.on_message(fail)
    sent = a.client.send(eb.id, "not acked")  # not kept: dropped after the 2 s ack timeout
    err = errors.wait_for(lambda _: True, "the callback error")
    assert isinstance(err, RuntimeError)
    receipt = a.receipts.wait_for(lambda r: r.id == sent.id, "the receipt", 10)
    assert receipt.state == "dropped", "no ack was sent"


def test_close_on_a_stalled_connection_waits_its_bound_and_fails_the_send(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    a = clients.online(f"ws://{proxy.address}/mqtt", ea)
    proxy.hold_down = True  # no PUBACK and no resp come back
    pending = a.client.send_nowait(eb.id, "stalled")
    started = time.monotonic()
    a.client.close(timeout=1.0)
    took = time.monotonic() - started
    assert 0.9 <= took < 1.0 + 3, f"close took {took:.2f} s for a 1 s bound"
    with pytest.raises(nixmsg.StoppedError) as err:
        pending.result(1)
    assert err.value.code == nixmsg.codes.CLOSED
    assert a.client.state == "offline"
    assert a.states.snapshot()[-1].state == "offline", "the last change reached the callback"


def test_close_releases_threads_and_sockets(harness: Harness, clients: Clients, proxy: Proxy) -> None:
    import os
    import threading

    ep = harness.endpoint()
    url = f"ws://{proxy.address}/mqtt"
    warm = clients.online(url, ep)
    warm.client.close()
    threads_before = threading.active_count()
    fds_before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        t = clients.online(url, ep)
        proxy.cut()  # one reconnect: a second network thread and paho client
        t.states.wait_count(2, lambda s: s.state == "online", "online again")
        t.client.close()
    deadline = time.monotonic() + WAIT
    while threading.active_count() > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads_before, [x.name for x in threading.enumerate()]
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2


class _StoppingLoop:
    """Holds open the window between a call's hand-off to a client's core loop and the loop's
    end: when ``caller`` hands something to the loop, a second login takes the client over and
    the hand-off waits until the loop has stopped for good (not closed yet), then goes through;
    the loop closes after it. Hooks the loop's ``call_soon_threadsafe`` and the callback pool's
    ``shutdown`` (the core thread's last step before the loop closes)."""

    def __init__(self, harness: Harness, clients: Clients, ep: Any, client: nixmsg.NixMsgClient) -> None:
        self.caller: threading.Thread | None = None
        loop = client._loop  # noqa: SLF001
        worker = client._worker  # noqa: SLF001
        loop_stopped = threading.Event()
        handed_off = threading.Event()
        forward = loop.call_soon_threadsafe
        shutdown = worker.shutdown

        def held_shutdown(wait: bool = True, *, cancel_futures: bool = False) -> None:
            loop_stopped.set()
            handed_off.wait(WAIT)
            shutdown(wait, cancel_futures=cancel_futures)

        def late(callback: Any, *args: Any, context: Any = None) -> Any:
            if threading.current_thread() is self.caller and not handed_off.is_set():
                clients.online(harness.ws_url, ep)
                assert loop_stopped.wait(WAIT), "the kicked client's loop did not stop"
                try:
                    return forward(callback, *args, context=context)
                finally:
                    handed_off.set()
            return forward(callback, *args, context=context)

        worker.shutdown = held_shutdown  # type: ignore[method-assign]
        loop.call_soon_threadsafe = late  # type: ignore[method-assign,assignment]

    def run(self, fn: Callable[[], None]) -> bool:
        """Runs ``fn`` as the caller; True when it returned within the wait."""
        self.caller = threading.Thread(target=fn, name="caller", daemon=True)
        self.caller.start()
        self.caller.join(WAIT)
        return not self.caller.is_alive()


def test_a_close_whose_start_the_stopping_loop_never_runs_returns_at_once(
    harness: Harness, clients: Clients
) -> None:
    """close handed to the core loop as the client stops for good (kicked meanwhile): it returns
    at once, well within its bound, and leaves no coroutine unawaited (pytest turns that warning
    into an error). Before, it waited its bound plus the threads' wait (10 s) for a close the
    loop never ran, and its coroutine was never awaited."""
    ep = harness.endpoint()
    a = clients.online(harness.ws_url, ep)
    window = _StoppingLoop(harness, clients, ep, a.client)
    took: list[float] = []

    def close() -> None:
        started = time.monotonic()
        a.client.close(timeout=5.0)
        took.append(time.monotonic() - started)

    assert window.run(close), "close did not return"
    assert took[0] < 5.0, f"close took {took[0]:.2f} s (bound 5 s)"
    assert a.client.state == "kicked"


def test_a_call_whose_start_the_stopping_loop_never_runs_fails_with_the_stop(
    harness: Harness, clients: Clients
) -> None:
    """A call past the client's stopped check whose start reaches the core thread's loop only
    after that loop stopped for good (the client was kicked meanwhile) fails with ``kicked``.
    With ``asyncio.run_coroutine_threadsafe`` the loop closed with the start unrun: the call
    never returned and its coroutine was never awaited."""
    ep = harness.endpoint()
    a = clients.online(harness.ws_url, ep)
    window = _StoppingLoop(harness, clients, ep, a.client)
    outcome: list[str] = []

    def call() -> None:
        try:
            a.client.get_self()
            outcome.append("answered")
        except nixmsg.NixMsgError as err:
            outcome.append(err.code)

    window.run(call)
    assert outcome == [nixmsg.codes.KICKED], f"the call ended with {outcome or 'nothing'}"
