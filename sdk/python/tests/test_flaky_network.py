"""Exactly-once delivery through repeated connection cuts: replayed sends keep their ids, the
receiver deduplicates re-pushes, and every send resolves once."""

from __future__ import annotations

import threading
from collections import Counter

from helpers import Clients, Harness, Proxy, by_id


def test_every_message_arrives_exactly_once_through_repeated_cuts(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ea, eb = harness.endpoint(), harness.endpoint()
    url = f"ws://{proxy.address}/mqtt"
    a = clients.online(url, ea)
    b = clients.online(url, eb)
    stop = threading.Event()

    def cutter() -> None:
        for _ in range(6):  # bounded: at most six cuts, 400 ms apart, the first at once
            proxy.cut()
            if stop.wait(0.4):
                return

    t = threading.Thread(target=cutter)
    t.start()
    n = 60
    try:
        futures = [a.client.send_nowait(eb.id, f"n{i}", keep=True) for i in range(n)]
        results = [f.result(60) for f in futures]
    finally:
        stop.set()
        t.join()
    assert len({r.id for r in results}) == n
    assert a.states.count(lambda s: s.state == "reconnecting") >= 1, "the cuts happened"
    for r in results:
        b.messages.wait_for(by_id(r.id), f"message {r.id}", 30)
    marker = a.client.send(eb.id, "marker", keep=True, timeout=30)
    b.messages.wait_for(by_id(marker.id), "the marker", 30)
    counts = Counter(m.id for m in b.messages.snapshot())
    assert all(counts[r.id] == 1 for r in results), "each exactly once"
    assert sorted(m.body for m in b.messages.snapshot() if m.id != marker.id) == sorted(
        f"n{i}" for i in range(n)
    )
