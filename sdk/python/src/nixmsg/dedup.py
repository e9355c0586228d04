"""A bounded record of what happened to each received item (spec 9 "接收")."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from .errors import ConfigError

S = TypeVar("S")


class DedupCache(Generic[S]):
    """Insertion ordered; the oldest record is dropped when ``capacity`` (10,000) is exceeded.

    Example::

        seen: DedupCache[str] = DedupCache(10_000)
        seen.set(message_key("app-1", "018f…"), "delivered")
        seen.get(message_key("app-1", "018f…"))  # "delivered"
    """

    def __init__(self, capacity: int = 10_000) -> None:
        if capacity < 1:
            raise ConfigError("Dedup capacity must be at least 1")
        self._capacity = capacity
        self._map: OrderedDict[str, S] = OrderedDict()

    def __len__(self) -> int:
        return len(self._map)

    def get(self, key: str) -> S | None:
        """The state recorded for ``key``, if any."""
        return self._map.get(key)

    def set(self, key: str, state: S) -> None:
        """Records ``state`` for ``key``; a new key may push out the oldest record."""
        if key in self._map:
            self._map[key] = state
            return
        self._map[key] = state
        while len(self._map) > self._capacity:
            self._map.popitem(last=False)

    def delete(self, key: str) -> None:
        """Forgets ``key``, so that the next arrival is processed again."""
        self._map.pop(key, None)


def message_key(sender: str, message_id: str) -> str:
    """The dedup key of a message: sender and message id (spec 9)."""
    return f"{sender}\x00{message_id}"
