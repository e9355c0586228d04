"""The in-memory send queue of spec 9 ("发送"): at most ``capacity`` sends held (in flight
included), at most ``max_in_flight`` published without a response, the same id and content when
replayed after a reconnect, and ``rate_limited`` answers retried with backoff.

It lives on the client's event loop; times are ``time.monotonic()`` seconds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .backoff import Backoff
from .errors import NixMsgError, ServerError, local_error
from .types import SendResult


@dataclass
class _Entry:
    frame: dict[str, Any]
    future: asyncio.Future[SendResult]
    rid: str | None = None
    not_before: float = 0.0
    retry: Backoff | None = field(default=None)


#: What a ``resp`` did to the queue.
SettleOutcome = Literal["done", "retry", "unknown"]


class SendQueue:
    """Example::

    queue = SendQueue()
    result = queue.add({"id": uuidv7(), "to": to, "body": body})  # an asyncio.Future
    while (e := queue.take(time.monotonic(), next_rid)) is not None:
        publish(frame_for(*e))
    queue.settle(resp_rid, ok=True, data=resp_data, error=None, now=time.monotonic())
    """

    def __init__(
        self,
        *,
        capacity: int = 1000,
        max_in_flight: int = 100,
        random: Callable[[], float] | None = None,
    ) -> None:
        self._capacity = capacity
        self._max_in_flight = max_in_flight
        self._random = random
        self._entries: list[_Entry] = []  # in the order of send calls; replay keeps it
        self._by_rid: dict[str, _Entry] = {}
        self._closed: NixMsgError | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def in_flight(self) -> int:
        """Sends published and waiting for their ``resp``."""
        return len(self._by_rid)

    def add(self, frame: dict[str, Any]) -> asyncio.Future[SendResult]:
        """Queues a send; raises ``queue_full`` or the error the queue was closed with."""
        if self._closed is not None:
            raise self._closed
        if len(self._entries) >= self._capacity:
            raise local_error("queue_full", f"The send queue already holds {self._capacity} messages")
        future: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()
        self._entries.append(_Entry(frame, future))
        return future

    def take(self, now: float, rid: Callable[[], str]) -> tuple[str, dict[str, Any]] | None:
        """The next send to publish under a new rid, or None when the window is full or nothing
        is due. Serialize it with :func:`frame_for`."""
        if len(self._by_rid) >= self._max_in_flight:
            return None
        for e in self._entries:
            if e.rid is None and e.not_before <= now:
                e.rid = rid()
                self._by_rid[e.rid] = e
                return e.rid, e.frame
        return None

    def next_due_at(self, now: float) -> float | None:
        """Earliest time a waiting send becomes due, when one waits for a retry; else None."""
        due = [e.not_before for e in self._entries if e.rid is None and e.not_before > now]
        return min(due) if due else None

    def in_flight_futures(self) -> list[asyncio.Future[SendResult]]:
        """The results of the sends published and waiting for their ``resp``."""
        return [e.future for e in self._by_rid.values()]

    def has(self, rid: str) -> bool:
        """True when ``rid`` belongs to a send in flight."""
        return rid in self._by_rid

    def settle(
        self,
        rid: str,
        *,
        ok: bool,
        data: Any,
        error: NixMsgError | None,
        now: float,
    ) -> SettleOutcome:
        """Applies the ``resp`` of a send: success or a final error settles the call;
        ``rate_limited`` puts the send back with a backoff delay (spec 9: not a failure)."""
        e = self._by_rid.pop(rid, None)
        if e is None:
            return "unknown"
        e.rid = None
        if not ok and error is not None and error.code == "rate_limited":
            if e.retry is None:
                e.retry = Backoff(random=self._random)
            e.not_before = now + e.retry.next()
            return "retry"
        self._entries.remove(e)
        if e.future.done():
            return "done"
        if ok:
            d = data if isinstance(data, dict) else {}
            sid = d.get("id")
            at = d.get("send_at_ms")
            state = d.get("state")
            e.future.set_result(
                SendResult(
                    id=sid if isinstance(sid, str) else str(e.frame["id"]),
                    send_at_ms=int(at) if isinstance(at, (int, float)) else 0,
                    state=state if isinstance(state, str) else "dispatched",  # type: ignore[arg-type]
                )
            )
        else:
            e.future.set_exception(error or ServerError("bad_response", "Send failed without an error"))
        return "done"

    def requeue_in_flight(self) -> None:
        """The connection is gone: sends in flight wait to be published again, unchanged."""
        for e in self._by_rid.values():
            e.rid = None
        self._by_rid.clear()

    def close(self, error: NixMsgError) -> None:
        """Ends every held send with ``error``, and refuses new ones with it (spec 9)."""
        if self._closed is None:
            self._closed = error
        entries, self._entries = self._entries, []
        self._by_rid.clear()
        for e in entries:
            if not e.future.done():
                e.future.set_exception(error)


def frame_for(rid: str, frame: dict[str, Any]) -> dict[str, Any]:
    """The wire frame of a queued send under ``rid``: the same content on every publish."""
    return {"v": 1, "type": "send", "rid": rid, **frame}
