"""The reconnect and retry schedule of spec 9 step 4."""

from __future__ import annotations

import random as _random
from collections.abc import Callable


class Backoff:
    """Exponential backoff: 1 s, doubling up to 30 s, each delay ±30 % jitter (spec 9 step 4).

    Example::

        backoff = Backoff()
        backoff.next()  # about 1.0, then 2.0, 4.0 … 30.0 (seconds)
        backoff.reset()  # after 60 s online
    """

    def __init__(
        self,
        *,
        initial: float = 1.0,
        maximum: float = 30.0,
        jitter: float = 0.3,
        random: Callable[[], float] | None = None,
    ) -> None:
        self._initial = initial
        self._maximum = maximum
        self._jitter = jitter
        self._random = random or _random.random
        self._attempt = 0

    @property
    def attempts(self) -> int:
        """How many delays were handed out since the last reset."""
        return self._attempt

    def next(self) -> float:
        """The delay before the next try, in seconds; each call advances the schedule."""
        base = min(self._maximum, self._initial * 2 ** min(self._attempt, 30))
        self._attempt += 1
        factor = 1 + self._jitter * (2 * self._random() - 1)
        return round(float(base * factor), 3)

    def reset(self) -> None:
        """Starts the schedule again at the first delay."""
        self._attempt = 0
