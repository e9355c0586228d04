"""Requests other than ``send`` waiting for their ``resp``, matched by ``rid`` (spec 6)."""

from __future__ import annotations

import asyncio
from typing import Any

from .errors import NixMsgError, ServerError, local_error


class PendingRequests:
    """Lives on the client's event loop.

    Example::

        requests = PendingRequests(30.0)
        answer = requests.wait(rid, "self.get")  # then publish the frame
        requests.settle(resp_rid, True, resp_data, None)  # resolves ``answer``
    """

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._map: dict[str, tuple[asyncio.Future[dict[str, Any]], asyncio.TimerHandle]] = {}

    def wait(self, rid: str, kind: str) -> asyncio.Future[dict[str, Any]]:
        """Registers ``rid``; the future fails with ``timeout`` when no answer comes in time."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()

        def expire() -> None:
            self._map.pop(rid, None)
            if not future.done():
                future.set_exception(
                    local_error("timeout", f"No response to {kind} within {self._timeout} s")
                )

        self._map[rid] = (future, loop.call_later(self._timeout, expire))
        return future

    def futures(self) -> list[asyncio.Future[dict[str, Any]]]:
        """The requests waiting for their answer."""
        return [f for f, _ in self._map.values()]

    def settle(self, rid: str, ok: bool, data: Any, error: NixMsgError | None) -> bool:
        """Applies a ``resp``; False when ``rid`` is not waited for."""
        entry = self._map.pop(rid, None)
        if entry is None:
            return False
        future, timer = entry
        timer.cancel()
        if future.done():
            return True
        if ok:
            future.set_result(data if isinstance(data, dict) else {})
        else:
            future.set_exception(error or ServerError("bad_response", "Request failed without an error"))
        return True

    def fail_all(self, error: NixMsgError) -> None:
        """Fails every waiting request with ``error`` (the connection is gone)."""
        entries = list(self._map.values())
        self._map.clear()
        for future, timer in entries:
            timer.cancel()
            if not future.done():
                future.set_exception(error)
