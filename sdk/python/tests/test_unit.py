"""Unit tests: backoff, dedup, send-queue replay, clock offset, local size checks, addresses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import nixmsg
from nixmsg.backoff import Backoff
from nixmsg.body import DEFAULT_LIMITS, Limits, encode_frame
from nixmsg.dedup import DedupCache, message_key
from nixmsg.errors import LimitError, ServerError, StoppedError
from nixmsg.link import Link, LinkOptions, StopCause, _Connection
from nixmsg.send_frame import build_send_frame
from nixmsg.send_queue import SendQueue, frame_for
from nixmsg.types import SendOptions
from nixmsg.url import connection_address, register_url


def test_backoff_doubles_to_30_s_with_30_percent_jitter_and_resets() -> None:
    low = Backoff(random=lambda: 0.0)
    assert [low.next() for _ in range(7)] == [0.7, 1.4, 2.8, 5.6, 11.2, 21.0, 21.0]
    high = Backoff(random=lambda: 0.999999)
    assert [round(high.next(), 1) for _ in range(7)] == [1.3, 2.6, 5.2, 10.4, 20.8, 39.0, 39.0]
    mid = Backoff(random=lambda: 0.5)
    assert [mid.next() for _ in range(3)] == [1.0, 2.0, 4.0]
    assert mid.attempts == 3
    mid.reset()
    assert mid.next() == 1.0
    for _ in range(100):
        assert 0.7 <= Backoff().next() <= 1.3


def test_dedup_drops_the_oldest_beyond_capacity() -> None:
    seen: DedupCache[str] = DedupCache(2)
    seen.set(message_key("a", "1"), "delivered")
    seen.set(message_key("a", "2"), "acked")
    seen.set(message_key("a", "1"), "acked")  # an update keeps its place
    seen.set(message_key("b", "1"), "queued")
    assert len(seen) == 2
    assert seen.get(message_key("a", "1")) is None
    assert seen.get(message_key("a", "2")) == "acked"
    seen.delete(message_key("a", "2"))
    assert seen.get(message_key("a", "2")) is None
    with pytest.raises(nixmsg.ConfigError) as err:
        DedupCache(0)
    assert err.value.code == nixmsg.codes.BAD_REQUEST


def test_send_queue_replays_in_flight_sends_with_the_same_id_and_content() -> None:
    async def main() -> None:
        q = SendQueue(capacity=3, max_in_flight=2)
        rids = iter(str(i) for i in range(100))
        frames = [{"id": f"m{i}", "to": {"kind": "endpoint", "id": "b"}} for i in range(3)]
        futures = [q.add(f) for f in frames]
        with pytest.raises(LimitError) as full:
            q.add({"id": "m4"})
        assert full.value.code == "queue_full"
        first = [q.take(0, lambda: next(rids)) for _ in range(3)]
        assert first[2] is None, "at most max_in_flight published"
        assert [t[1]["id"] for t in first if t] == ["m0", "m1"]
        # The connection drops: both go out again, in order, with the same content, new rids.
        q.requeue_in_flight()
        again = [q.take(0, lambda: next(rids)) for _ in range(2)]
        assert [t[1] for t in again if t] == frames[:2]
        assert [t[0] for t in again if t] == ["2", "3"]
        assert frame_for("2", frames[0]) == {"v": 1, "type": "send", "rid": "2", **frames[0]}
        # The answer to an old rid is ignored; the new one settles.
        assert q.settle("0", ok=True, data={}, error=None, now=0) == "unknown"
        q.settle("2", ok=True, data={"id": "m0", "send_at_ms": 5, "state": "dispatched"}, error=None, now=0)
        assert futures[0].result() == nixmsg.SendResult("m0", 5, "dispatched")
        # rate_limited is retried after a backoff delay, not failed.
        rl = ServerError("rate_limited")
        assert q.settle("3", ok=False, data=None, error=rl, now=10.0) == "retry"
        assert not futures[1].done()
        assert q.take(10.0, lambda: next(rids))[1]["id"] == "m2"  # type: ignore[index]
        due = q.next_due_at(10.0)
        assert due is not None and 10.7 <= due <= 11.3
        assert q.take(10.0, lambda: next(rids)) is None
        assert q.take(due, lambda: next(rids))[1]["id"] == "m1"  # type: ignore[index]
        # Closing ends every held send with the stop error.
        stop = StoppedError("kicked", reason="taken_over")
        q.close(stop)
        assert futures[1].exception() is stop and futures[2].exception() is stop
        with pytest.raises(StoppedError):
            q.add({"id": "late"})

    asyncio.run(main())


def test_local_size_checks_match_the_server() -> None:
    limits = DEFAULT_LIMITS
    opts = SendOptions()
    build_send_frame("b", bytes(262_144), opts, limits, 0)
    build_send_frame("b", "é" * 131_072, opts, limits, 0)
    for body in (bytes(262_145), "x" * 262_145, "é" * 131_073):
        with pytest.raises(LimitError) as e:
            build_send_frame("b", body, opts, limits, 0)
        assert e.value.code == "body_too_large"
    with pytest.raises(LimitError) as frame:
        build_send_frame("b", "\x01" * 262_144, opts, limits, 0)
    assert frame.value.code == "frame_too_large", "JSON escaping grows the frame"
    with pytest.raises(LimitError) as meta:
        build_send_frame("b", "x", SendOptions(meta={"k": "v" * 4096}), limits, 0)
    assert meta.value.code == "meta_too_large"
    with pytest.raises(LimitError) as surrogate:
        build_send_frame("b", "\ud800", opts, limits, 0)
    assert surrogate.value.code == "bad_request"
    with pytest.raises(nixmsg.ConfigError) as both:
        SendOptions(delay=1, send_at=1)
    assert both.value.code == nixmsg.codes.BAD_REQUEST
    small = Limits(max_body_bytes=10, max_meta_bytes=10, max_frame_bytes=1000)
    with pytest.raises(LimitError):
        build_send_frame("b", "x" * 11, opts, small, 0)


def test_frames_keep_non_ascii_and_html_unescaped() -> None:
    text = encode_frame({"body": "你好 <b>&"}, 1000)
    assert text == '{"body":"你好 <b>&"}'
    f = build_send_frame(nixmsg.Target.group("g_1"), b"\x00\xff", SendOptions(keep=True, ttl=5), DEFAULT_LIMITS, 0)
    assert f["to"] == {"kind": "group", "id": "g_1"}
    assert f["body"] == {"enc": "base64", "data": "AP8="}
    assert f["offline"] == {"keep": True, "ttl_seconds": 5}
    assert len(f["id"]) == 36 and f["id"][14] == "7"
    assert build_send_frame("b", "x", SendOptions(ttl=5), DEFAULT_LIMITS, 0)["offline"] == {
        "keep": True,
        "ttl_seconds": 5,
    }


class _Recorder:
    def __init__(self) -> None:
        self.online: list[tuple[float, str | None]] = []

    def link_state(
        self, state: str, reason: str, retry_in: float | None, error: BaseException | None = None
    ) -> None:
        pass

    def link_online(self, hello: dict[str, Any], offset_ms: float, token: str | None) -> None:
        self.online.append((offset_ms, token))

    def link_frame(self, frame: dict[str, Any]) -> None:
        pass

    def link_down(self) -> None:
        pass

    def link_stopped(self, cause: StopCause) -> None:
        pass


def test_clock_offset_is_server_time_minus_the_midpoint_of_the_hello_round_trip() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        events = _Recorder()
        link = Link(
            loop,
            LinkOptions(
                address=connection_address("ws://127.0.0.1:1/mqtt"),
                endpoint_id="a",
                password="p",
                token=None,
                keepalive=30,
                connect_timeout=30,
                max_receive_bytes=1024,
                client_name="test",
                ssl_context=None,
                next_rid=lambda: "1",
            ),
            events,
        )
        conn = _Connection(link, "p")
        link._conn = conn
        import nixmsg.link as link_module

        times = iter([1_000_000.0])
        original = link_module._now_ms
        link_module._now_ms = lambda: next(times)
        try:
            conn.hello_sent_at = 999_000.0  # sent 1 s before the answer: midpoint 999,500
            conn.hello_rid = "h"
            hello = {"server_time_ms": 1_004_500, "session_token": "nst_x"}
            link._payload(conn, json.dumps({"type": "resp", "rid": "h", "ok": True, "data": hello}).encode())
        finally:
            link_module._now_ms = original
        assert events.online == [(5000.0, "nst_x")]
        assert link.session_token == "nst_x"
        link.halt(StopCause("offline", "closed"))

    asyncio.run(main())


def test_send_at_is_converted_with_the_offset_once() -> None:
    f = build_send_frame("b", "x", SendOptions(send_at=1_000_000), DEFAULT_LIMITS, 2500.4)
    assert f["send_at_ms"] == 1_002_500
    import datetime

    at = datetime.datetime.fromtimestamp(1000, datetime.timezone.utc)
    assert build_send_frame("b", "x", SendOptions(send_at=at), DEFAULT_LIMITS, -1000)["send_at_ms"] == 999_000


def test_addresses() -> None:
    assert connection_address("https://relay.example:7443").url == "wss://relay.example:7443/mqtt"
    assert connection_address("wss://relay.example:7443/mqtt", "tcp").url == "mqtts://relay.example:7443"
    assert connection_address("http://h:1/base/mqtt/").path == "/base/mqtt"
    assert connection_address("mqtt://h:1").url == "ws://h:1/mqtt"
    assert register_url("wss://relay.example:7443/mqtt") == "https://relay.example:7443/api/client/register"
    assert register_url("mqtt://10.0.0.5:7443") == "http://10.0.0.5:7443/api/client/register"
    with pytest.raises(nixmsg.ConfigError) as err:
        connection_address("ftp://h")
    assert err.value.code == nixmsg.codes.BAD_REQUEST


def test_listeners_hand_events_fired_before_the_first_callback_to_it_in_order() -> None:
    """The sync client starts connecting on its own thread at once, so ``connecting`` can fire
    before ``on_connection`` is called; the first callback must still see it, in order."""
    from nixmsg.listeners import Dispatcher, Listeners

    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        seen: list[str] = []

        async def invoke(fn: Any, arg: Any) -> None:
            fn(arg)

        d = Dispatcher(invoke, lambda err: None)
        states: Listeners[str] = Listeners(loop, keep_unheard=True)
        def replay() -> None:
            loop.call_soon_threadsafe(d.flush, states)

        states.on_replay = replay
        d.emit(states, "connecting")
        await d.idle()
        d.emit(states, "online")
        states.add(seen.append)  # added while "online" is queued but not yet delivered
        await d.idle()
        await asyncio.sleep(0)  # the replay flush is queued through the loop
        await d.idle()
        d.emit(states, "reconnecting")
        await d.idle()
        late: list[str] = []
        states.add(late.append)
        d.emit(states, "online")
        await d.idle()
        return seen + ["|"] + late

    assert asyncio.run(scenario()) == ["connecting", "online", "reconnecting", "online", "|", "online"]


def test_the_code_constants_cover_spec_6_10_and_the_sdk_codes() -> None:
    assert len(nixmsg.codes.SERVER_CODES) == 23
    assert nixmsg.errors.LOCAL_CODES == nixmsg.codes.SDK_CODES
    assert nixmsg.codes.SERVER_CODES.isdisjoint(nixmsg.codes.SDK_CODES)
    exported = {v for k, v in vars(nixmsg.codes).items() if k.isupper() and isinstance(v, str)}
    assert exported == nixmsg.codes.ALL_CODES
