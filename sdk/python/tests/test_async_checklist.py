"""Checklist items 1, 2, 3, 8 and 15 with the asyncio client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

import nixmsg
from helpers import NO_RECONNECT_WINDOW, WAIT, Endpoint, Harness, Proxy

T = TypeVar("T")


class AsyncEvents(list[T]):
    """Recorded events on the loop; ``wait_for`` polls a condition variable, bounded."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = asyncio.Event()

    async def push(self, item: T) -> None:  # an async callback, as applications write them
        self.append(item)
        self._changed.set()

    async def wait_for(self, pred: Callable[[T], bool], what: str, timeout: float = WAIT) -> T:
        async def find() -> T:
            while True:
                for i in self:
                    if pred(i):
                        return i
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"Timed out waiting for {what}") from None

    def count_where(self, pred: Callable[[T], bool]) -> int:
        return sum(1 for i in self if pred(i))


class Tracked:
    def __init__(self, url: str, ep_id: str, **kw: object) -> None:
        self.client = nixmsg.AsyncNixMsgClient.connect(url, ep_id, **kw)  # type: ignore[arg-type]
        self.messages: AsyncEvents[nixmsg.Message] = AsyncEvents()
        self.receipts: AsyncEvents[nixmsg.Receipt] = AsyncEvents()
        self.states: AsyncEvents[nixmsg.ConnectionEvent] = AsyncEvents()
        self.sessions: AsyncEvents[str] = AsyncEvents()
        self.client.on_message(self.messages.push)
        self.client.on_receipt(self.receipts.push)
        self.client.on_connection(self.states.push)
        self.client.on_session(self.sessions.push)


def run(body: Callable[[list[Tracked]], Awaitable[None]]) -> None:
    """Runs ``body`` on a fresh loop and closes every client it made."""

    async def main() -> None:
        made: list[Tracked] = []
        try:
            await asyncio.wait_for(body(made), 60)
        finally:
            for t in made:
                await t.client.close()

    asyncio.run(main())


async def online(made: list[Tracked], url: str, ep: Endpoint, **kw: object) -> Tracked:
    t = Tracked(url, ep.id, password=ep.password, **kw)
    made.append(t)
    await asyncio.wait_for(t.client.ready(), WAIT)
    return t


def test_async_checklist_01_login_and_handshake_parameters(harness: Harness) -> None:
    ep = harness.endpoint()

    async def body(made: list[Tracked]) -> None:
        a = await online(made, harness.ws_url, ep)
        info = a.client.server_info
        assert info is not None and info.max_body_bytes == 262144 and info.ack_timeout_seconds == 2
        assert abs(a.client.clock_offset_ms) < 1000
        assert [s.state for s in a.states] == ["connecting", "online"]
        assert len(a.sessions) == 1 and a.sessions[0].startswith("nst_")
        assert (await a.client.get_self()).id == ep.id
        tcp = await online(made, harness.ws_url, ep, options=nixmsg.ConnectOptions(transport="tcp"))
        assert (await tcp.client.get_self()).id == ep.id

    run(body)


def test_async_checklist_02_one_to_one_message_delivered_once(harness: Harness) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()

    async def body(made: list[Tracked]) -> None:
        a = await online(made, harness.ws_url, ea)
        b = await online(made, harness.ws_url, eb, options=nixmsg.ConnectOptions(transport="tcp"))
        sent = await a.client.send(eb.id, "你好 <b>&", meta={"k": "v"})
        assert len(sent.id) == 36 and sent.state == "dispatched"
        got = await b.messages.wait_for(lambda m: m.id == sent.id, "the message")
        assert (got.body, got.sender, got.meta) == ("你好 <b>&", ea.id, {"k": "v"})
        assert got.to == nixmsg.Target("endpoint", eb.id)
        assert got.send_at_ms == sent.send_at_ms
        r = await a.receipts.wait_for(lambda r: r.id == sent.id, "the receipt")
        assert (r.state, r.endpoint_id) == ("accepted", eb.id)
        binary = await a.client.send(eb.id, b"\x00\x01\xff", content_type="application/x-test")
        gb = await b.messages.wait_for(lambda m: m.id == binary.id, "the binary message")
        assert (gb.body, gb.content_type) == (b"\x00\x01\xff", "application/x-test")
        assert b.messages.count_where(lambda m: m.id == sent.id) == 1

    run(body)


def test_async_checklist_03_send_while_disconnected_delivered_once(
    harness: Harness, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()

    async def body(made: list[Tracked]) -> None:
        a = await online(made, f"ws://{proxy.address}/mqtt", ea)
        b = await online(made, harness.ws_url, eb)
        proxy.refuse = True
        proxy.cut()
        await a.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
        pending = asyncio.ensure_future(a.client.send(eb.id, "sent while offline", keep=True))
        await asyncio.sleep(0)
        assert not pending.done()
        proxy.refuse = False
        sent = await asyncio.wait_for(pending, 30)
        await b.messages.wait_for(lambda m: m.id == sent.id, "the queued message")
        marker = await a.client.send(eb.id, "marker")
        await b.messages.wait_for(lambda m: m.id == marker.id, "the marker")
        assert b.messages.count_where(lambda m: m.id == sent.id) == 1
        assert len(b.messages) == 2

    run(body)


def test_async_checklist_08_group_members_receive_sender_does_not(harness: Harness) -> None:
    ea, eb, ec = harness.endpoint(), harness.endpoint(), harness.endpoint()

    async def body(made: list[Tracked]) -> None:
        a = await online(made, harness.ws_url, ea)
        b = await online(made, harness.ws_url, eb)
        c = await online(made, harness.ws_url, ec)
        created = await a.client.groups.create("floor 1", [eb.id, nixmsg.GroupMemberInput(ec.id)])
        assert created.group_id.startswith("g_") and created.failed == []
        group = await a.client.groups.get(created.group_id)
        assert (group.owner_id, group.member_count) == (ea.id, 3)
        assert any(g.id == created.group_id for g in (await b.client.groups.list()).items)
        sent = await a.client.send(nixmsg.Target.group(created.group_id), "to everyone")
        for t in (b, c):
            m = await t.messages.wait_for(lambda m: m.id == sent.id, "a member's copy")
            assert (m.body, m.sender) == ("to everyone", ea.id)
        await a.receipts.wait_for(
            lambda _r: a.receipts.count_where(lambda r: r.id == sent.id and r.state == "accepted") >= 2,
            "two receipts",
        )
        marker = await b.client.send(ea.id, "marker")
        await a.messages.wait_for(lambda m: m.id == marker.id, "the marker")
        assert a.messages.count_where(lambda m: m.id == sent.id) == 0

    run(body)


def test_async_checklist_15_session_tokens(harness: Harness, proxy: Proxy) -> None:
    ep = harness.endpoint()

    async def body(made: list[Tracked]) -> None:
        a = await online(made, f"ws://{proxy.address}/mqtt", ep)
        token = a.sessions[0]
        proxy.cut()
        await a.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
        await a.states.wait_for(
            lambda _s: a.states.count_where(lambda s: s.state == "online") >= 2, "online again"
        )
        assert a.sessions == [token] and a.client.session_token == token
        await a.client.close()

        b = Tracked(harness.ws_url, ep.id, session_token=token)
        made.append(b)
        await asyncio.wait_for(b.client.ready(), WAIT)
        assert b.sessions == []
        c = await online(made, harness.ws_url, ep)
        kicked = await b.states.wait_for(lambda s: s.state == "kicked", "kicked")
        assert kicked.reason == "taken_over"
        new_token = c.sessions[0]
        assert new_token != token

        stale = Tracked(f"ws://{proxy.address}/mqtt", ep.id, session_token=token)
        made.append(stale)
        refused = await stale.states.wait_for(lambda s: s.state == "auth_failed", "auth_failed")
        assert refused.reason == "session_invalid"
        attempts = proxy.accepted.count()
        await asyncio.to_thread(
            proxy.accepted.expect_none, lambda _: True, "a reconnect", NO_RECONNECT_WINDOW
        )
        assert proxy.accepted.count() == attempts

        await c.client.logout()
        off = await c.states.wait_for(lambda s: s.state == "offline", "offline")
        assert off.reason == "logout"
        with pytest.raises(nixmsg.NixMsgError) as closed:
            await c.client.get_self()
        assert closed.value.code == "closed"
        after = Tracked(harness.ws_url, ep.id, session_token=new_token)
        made.append(after)
        gone = await after.states.wait_for(lambda s: s.state == "auth_failed", "auth_failed")
        assert gone.reason == "session_invalid"

    run(body)
