"""Application callbacks and the serial dispatcher that runs them (spec 9: callbacks run one at
a time, in arrival order)."""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

A = TypeVar("A")

#: Most events a listener set keeps for its first callback (see ``keep_unheard``).
UNHEARD_MAX = 32

#: Runs one application callback with its argument; the sync client runs it on its callback
#: thread, the asyncio client awaits it on the application's loop.
Invoke = Callable[[Callable[[Any], Any], Any], Awaitable[None]]


class Listeners(Generic[A]):
    """A set of callbacks; ``add`` returns the function that removes the callback. Safe to call
    from any thread (copy on write)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, keep_unheard: bool = False) -> None:
        self._loop = loop
        self._fns: tuple[Callable[[A], Any], ...] = ()
        self._waiters: list[asyncio.Future[None]] = []
        # The client starts connecting on its own thread as soon as it is made, so its first
        # state and session events can fire before the application adds a callback. With
        # ``keep_unheard`` those events are kept and handed to the first callback, in order.
        self._lock = threading.Lock()
        self._unheard: list[A] | None = [] if keep_unheard else None
        self._replay: list[A] = []
        #: Called (from any thread) when kept events wait for delivery; the core queues a flush.
        self.on_replay: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._fns)

    def snapshot(self) -> tuple[Callable[[A], Any], ...]:
        return self._fns

    def take(self, arg: A | None, has_arg: bool) -> tuple[tuple[Callable[[A], Any], ...], list[A]]:
        """The callbacks to call now and the events to hand them first. With no callback yet and
        ``keep_unheard``, ``arg`` is kept instead."""
        with self._lock:
            fns = self._fns
            if not fns:
                if has_arg and self._unheard is not None and len(self._unheard) < UNHEARD_MAX:
                    self._unheard.append(arg)  # type: ignore[arg-type]
                return (), []
            replay, self._replay = self._replay, []
            return fns, replay

    def add(self, fn: Callable[[A], Any]) -> Callable[[], None]:
        replay = False
        with self._lock:
            self._fns = (*self._fns, fn)
            if self._unheard is not None:
                self._replay, self._unheard = self._unheard, None
                replay = bool(self._replay)
        if replay and self.on_replay is not None:
            self.on_replay()
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:
            pass  # the loop is closed: nothing waits any more

        def remove() -> None:
            self._fns = tuple(f for f in self._fns if f is not fn)

        return remove

    def when_any(self) -> asyncio.Future[None]:
        """Resolves once at least one callback is registered (on the client's loop)."""
        future: asyncio.Future[None] = self._loop.create_future()
        if self._fns:
            future.set_result(None)
        else:
            self._waiters.append(future)
        return future

    def release(self) -> None:
        """The client has stopped: nothing waits for a callback any more."""
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            w.cancel()

    def _wake(self) -> None:
        if not self._fns:
            return
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)


class Dispatcher:
    """Runs tasks one at a time in the order they were queued; errors go to ``on_error``."""

    def __init__(self, invoke: Invoke, on_error: Callable[[BaseException], None]) -> None:
        self._invoke = invoke
        self._on_error = on_error
        self._tasks: collections.deque[Callable[[], Awaitable[None]]] = collections.deque()
        self._running: asyncio.Task[None] | None = None
        self._idle: list[asyncio.Future[None]] = []

    @property
    def running(self) -> asyncio.Task[None] | None:
        """The task that runs the queued tasks, while there are any."""
        return self._running

    def serial(self, task: Callable[[], Awaitable[None]]) -> None:
        """Queues ``task`` behind every task queued before it."""
        self._tasks.append(task)
        if self._running is None:
            self._running = asyncio.get_running_loop().create_task(self._drain())

    async def run(self, listeners: Listeners[A], arg: A) -> None:
        """Calls every callback of ``listeners`` in turn; the first error propagates."""
        for fn in listeners.snapshot():
            await self._invoke(fn, arg)

    def emit(self, listeners: Listeners[A], arg: A) -> None:
        """Queues a call of every callback; each error goes to ``on_error``."""
        self._deliver(listeners, arg, True)

    def flush(self, listeners: Listeners[A]) -> None:
        """Queues the delivery of events kept for a first callback (``keep_unheard``)."""
        self._deliver(listeners, None, False)

    def _deliver(self, listeners: Listeners[A], arg: A | None, has_arg: bool) -> None:
        async def task() -> None:
            fns, earlier = listeners.take(arg, has_arg)
            args: list[A] = [*earlier, arg] if has_arg else earlier  # type: ignore[list-item]
            for a in args:
                for fn in fns:
                    try:
                        await self._invoke(fn, a)
                    except Exception as err:  # noqa: BLE001 - application code
                        self._on_error(err)

        self.serial(task)

    def idle(self) -> asyncio.Future[None]:
        """Resolves when every task queued so far has run."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._running is None:
            future.set_result(None)
        else:
            self._idle.append(future)
        return future

    async def _drain(self) -> None:
        try:
            while self._tasks:
                task = self._tasks.popleft()
                try:
                    await task()
                except Exception as err:  # noqa: BLE001 - application code
                    self._on_error(err)
        finally:
            self._running = None
            idle, self._idle = self._idle, []
            for f in idle:
                if not f.done():
                    f.set_result(None)
