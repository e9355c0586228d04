"""Checklist item 16 (spec 13 弱网, sdk/conformance/checklist.md): through toxiproxy, kept
messages all arrive, the application sees each exactly once, and every receipt arrives once.
Mirrors sdk/ts/test/integration/checklist_weak_network.test.ts step by step, with the harness's
toxiproxy commands only."""

from __future__ import annotations

import concurrent.futures
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

import nixmsg
from helpers import Clients, Harness, Tracked

N = 100
BATCH = 10
KEEPALIVE_B = 10  # the SDK's smallest keep-alive, in seconds
STEP = 30.0

Stream = Literal["upstream", "downstream"]


def add_toxic(h: Harness, proxy: str, kind: str, stream: Stream, attributes: dict[str, int]) -> str:
    """``toxic_add`` on ``proxy``; returns the toxic's name."""
    cmd = {"cmd": "toxic_add", "proxy": proxy, "type": kind, "stream": stream}
    toxic = h.command({**cmd, "attributes": attributes})
    return str(toxic["name"])


def remove_toxics(h: Harness, proxy: str, names: list[str] | None = None) -> None:
    """Removes the named toxics, or every toxic of ``proxy`` without names."""
    if names is None:
        h.command({"cmd": "toxic_remove", "proxy": proxy})
        return
    for name in names:
        h.command({"cmd": "toxic_remove", "proxy": proxy, "name": name})


def admin(h: Harness, path: str) -> Any:
    """``GET path`` on the admin API; returns the body's ``data``."""
    answer = h.command({"cmd": "admin", "method": "GET", "path": path})
    assert answer["status"] == 200, answer
    return answer["body"]["data"]


def is_reconnecting(e: nixmsg.ConnectionEvent) -> bool:
    return e.state == "reconnecting"


def next_reconnect(t: Tracked, timeout: float, what: str) -> Callable[[], None]:
    """Counts ``t``'s reconnects now; the returned function waits for the next one."""
    n = t.states.count(is_reconnecting)
    return lambda: t.states.wait_count(n + 1, is_reconnecting, what, timeout)


def test_checklist_16_weak_network(harness: Harness, clients: Clients) -> None:
    h = harness
    ea, eb = h.endpoint(), h.endpoint()
    # 1. A over raw TCP through PA, B over WebSocket through PB.
    pa = h.command({"cmd": "toxiproxy_start"})
    pb = h.command({"cmd": "toxiproxy_start"})
    assert re.fullmatch(r"mqtt://127\.0\.0\.1:\d+", pa["tcp_url"])
    assert re.fullmatch(r"ws://127\.0\.0\.1:\d+/mqtt", pb["ws_url"])
    pa_name, pb_name = str(pa["name"]), str(pb["name"])
    try:
        a = clients.online(pa["tcp_url"], ea, nixmsg.ConnectOptions(transport="tcp"))
        b = clients.online(pb["ws_url"], eb, nixmsg.ConnectOptions(keepalive=KEEPALIVE_B))
        # b.messages records every run of B's message callback, a.receipts every receipt.
        run_weak_network(h, ea.id, eb.id, pa_name, pb_name, a, b)
    finally:
        # A failed run must not leave a toxic under the clients that the fixture closes.
        for p in (pa_name, pb_name):
            remove_toxics(h, p)


def run_weak_network(
    h: Harness, a_id: str, b_id: str, pa: str, pb: str, a: Tracked, b: Tracked
) -> None:
    # 2. Latency with jitter on every stream, to the end.
    streams: tuple[Stream, Stream] = ("upstream", "downstream")
    for p in (pa, pb):
        for stream in streams:
            add_toxic(h, p, "latency", stream, {"latency": 40, "jitter": 30})

    # 3. Ten batches of ten kept messages, each with its disruption.
    sends: list[concurrent.futures.Future[nixmsg.SendResult]] = []

    def send_batch() -> None:
        for _ in range(BATCH):
            n = len(sends)
            sends.append(a.client.send_nowait(b_id, f"w-{n}", keep=True, ttl=600, meta={"n": n}))

    def all_so_far() -> None:
        want = len(sends)
        b.messages.wait_until(
            lambda ms: len({m.text for m in ms}) >= want, f"B holds {want} bodies", STEP
        )

    sliced = {"average_size": 16, "size_variation": 8, "delay": 500}

    def step2() -> None:
        cut = [add_toxic(h, pb, "slicer", s, sliced) for s in streams]
        slow = add_toxic(h, pa, "bandwidth", "upstream", {"rate": 16})
        send_batch()
        all_so_far()
        remove_toxics(h, pb, cut)
        remove_toxics(h, pa, [slow])

    def step3() -> None:
        late = add_toxic(h, pb, "latency", "upstream", {"latency": 3000})
        send_batch()
        time.sleep(3)  # how long the acks are held back, past the 2 s ack timeout
        remove_toxics(h, pb, [late])
        all_so_far()

    def step4() -> None:
        gone = next_reconnect(b, STEP, "B reconnecting after its acks were lost")
        lost = add_toxic(h, pb, "timeout", "upstream", {"timeout": 300})
        send_batch()
        gone()
        remove_toxics(h, pb, [lost])
        all_so_far()

    def step5() -> None:
        gone = next_reconnect(a, STEP, "A reconnecting after its responses were lost")
        lost = add_toxic(h, pa, "timeout", "downstream", {"timeout": 300})
        send_batch()
        gone()
        remove_toxics(h, pa, [lost])
        all_so_far()

    def step6() -> None:
        gone = next_reconnect(a, STEP, "A reconnecting after reset_peer")
        reset = add_toxic(h, pa, "reset_peer", "upstream", {"timeout": 0})
        send_batch()
        gone()
        remove_toxics(h, pa, [reset])
        all_so_far()

    def step7() -> None:
        gone = next_reconnect(b, STEP, "B reconnecting after limit_data")
        limit = add_toxic(h, pb, "limit_data", "downstream", {"bytes": 1500})
        send_batch()
        gone()
        remove_toxics(h, pb, [limit])
        all_so_far()

    def step8() -> None:
        bound = 1.5 * KEEPALIVE_B + 15
        gone = next_reconnect(b, bound, "B's keep-alive ending the half-open connection")
        dead = [add_toxic(h, pb, "timeout", s, {"timeout": 0}) for s in streams]
        send_batch()
        gone()
        remove_toxics(h, pb, dead)
        all_so_far()

    def step9() -> None:
        remove_toxics(h, pa)
        remove_toxics(h, pb)
        send_batch()
        all_so_far()

    steps: dict[int, Callable[[], None]] = {
        2: step2, 3: step3, 4: step4, 5: step5, 6: step6, 7: step7, 8: step8, 9: step9,
    }  # fmt: skip
    for batch in range(1, N // BATCH + 1):
        step = steps.get(batch)
        if step is not None:
            step()
        else:
            send_batch()
            all_so_far()

    # 4. Every send answered, A holds N receipts; then a window for late duplicates.
    deadline = time.monotonic() + 60
    sent = [f.result(max(0.0, deadline - time.monotonic())) for f in sends]
    a.receipts.wait_count(N, lambda _: True, "receipts", 60)
    time.sleep(3)  # the window in which a late duplicate would show up

    # 5. Exactly once at the application, one accepted receipt per message.
    ids = [r.id for r in sent]
    assert len(set(ids)) == N, "distinct message ids"
    messages = b.messages.snapshot()
    seen = Counter(m.text for m in messages)  # body -> callback runs
    id_of_body = {m.text: m.id for m in messages}
    for i, r in enumerate(sent):
        assert id_of_body.get(f"w-{i}") == r.id, f"id of w-{i}"
    assert len(seen) == N, "B's application saw every body"
    assert [body for body, n in seen.items() if n != 1] == [], "each exactly once"
    receipts = a.receipts.snapshot()
    assert len(receipts) == N, "one receipt callback per message"
    assert len({r.receipt_id for r in receipts}) == N, "distinct receipts"
    for receipt in receipts:
        assert receipt.state == "accepted", receipt
        assert receipt.endpoint_id == b_id, receipt
    assert {r.id for r in receipts} == set(ids), "a receipt per id"
    ra, rb = a.states.count(is_reconnecting), b.states.count(is_reconnecting)
    assert ra >= 2, f"A reconnected {ra} times"
    assert rb >= 2, f"B reconnected {rb} times"
    assert b.revoked.count() == 0, "nothing revoked at B"

    # 6. The server agrees, and it pushed some messages more than once.
    items = admin(h, f"/api/admin/messages?sender={a_id}&limit=200")["items"]
    assert len(items) == N, "one record per send"
    assert {m["id"] for m in items} == set(ids)
    for m in items:
        assert m["state"] == "completed", f"record {m['id']}"
        assert m["counts"]["accepted"] == 1, f"record {m['id']} accepted once"
    attempts = 0
    for m in items:
        detail = admin(h, f"/api/admin/messages/{m['seq']}")
        attempts += sum(int(d["attempts"]) for d in detail["items"])
    print(
        f"{N} sent, {len(seen)} delivered once to the application, {attempts} server pushes, "
        f"{len(receipts)} receipts; reconnects A {ra}, B {rb}"
    )
    assert attempts > N, f"the server pushed again ({attempts} pushes for {N} messages)"
