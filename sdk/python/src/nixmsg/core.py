"""The core of the client (spec 9): connection, send queue, receiving and request matching.

It runs on one asyncio event loop: a private thread's loop for :class:`nixmsg.NixMsgClient`,
the application's loop for :class:`nixmsg.AsyncNixMsgClient`. Only the methods documented as
thread safe may be called from elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any, Literal

from .body import DEFAULT_LIMITS, Limits, encode_frame
from .errors import ConfigError, NixMsgError, StoppedError, local_error
from .link import Link, LinkOptions, StopCause
from .listeners import Dispatcher, Invoke, Listeners
from .receiver import Receiver
from .requests import PendingRequests
from .send_frame import build_send_frame
from .send_queue import SendQueue, frame_for
from .types import (
    ConnectionEvent,
    ConnectionState,
    ConnectOptions,
    Credential,
    Password,
    Recipient,
    SendOptions,
    SendResult,
    ServerInfo,
)
from .url import connection_address
from .wire import (
    to_group_event,
    to_message,
    to_presence,
    to_receipt,
    to_revoked,
    to_server_info,
    resp_error,
)

#: The ``client`` name sent in ``hello`` (spec 6.1).
CLIENT_NAME = "py-sdk/0.1.0"
#: The default bound of ``close``, in seconds (checklist 17).
CLOSE_TIMEOUT = 5.0
#: How long a stopping client waits for its final callbacks (the last state change) to run.
_CALLBACKS_WAIT = 5.0

log = logging.getLogger("nixmsg")


def _log_callback_error(err: BaseException) -> None:
    log.error("nixmsg: callback failed", exc_info=err)


def _ssl_context(o: ConnectOptions) -> ssl.SSLContext | None:
    if o.ssl_context is not None:
        return o.ssl_context
    if o.ca_file is not None:
        return ssl.create_default_context(cafile=o.ca_file)
    return None


class ClientCore:
    """The machinery behind the clients. Applications use ``NixMsgClient`` or
    ``AsyncNixMsgClient``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        invoke: Invoke,
        url: str,
        endpoint_id: str,
        credential: Credential,
        o: ConnectOptions,
    ) -> None:
        if not isinstance(endpoint_id, str) or endpoint_id == "":
            raise ConfigError("The endpoint id is empty")
        address = connection_address(url, o.transport)
        self.loop = loop
        self.endpoint_id = endpoint_id
        on_error: Callable[[BaseException], None] = o.on_callback_error or _log_callback_error
        self._on_error = on_error
        self.dispatcher = Dispatcher(invoke, on_error)
        self.sessions: Listeners[str] = Listeners(loop, keep_unheard=True)
        self.connections: Listeners[ConnectionEvent] = Listeners(loop, keep_unheard=True)
        self.sessions.on_replay = lambda: self._flush_later(self.sessions)
        self.connections.on_replay = lambda: self._flush_later(self.connections)
        self._pending = PendingRequests(o.request_timeout)
        self._queue = SendQueue(capacity=o.queue_capacity, max_in_flight=o.max_in_flight)
        self.receiver = Receiver(
            loop,
            self.dispatcher,
            o.ack_mode,
            o.dedup_capacity,
            self._send_ack,
            self._send_receipt_ack,
            on_error,
        )
        self.state: ConnectionState = "connecting"
        self.stop_error: NixMsgError | None = None
        self.info: ServerInfo | None = None
        self.offset_ms = 0.0
        self._issued_token: str | None = None
        self._rid = 0
        self._pump_timer: asyncio.TimerHandle | None = None
        self._ready: list[asyncio.Future[ServerInfo]] = []
        self._ready_now: list[asyncio.Future[ServerInfo]] = []
        self._watching: dict[str, Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._close_task: asyncio.Task[None] | None = None
        self._release_task: asyncio.Task[None] | None = None
        #: The last transport error of a failed attempt (cleared online); ``ready`` reports it.
        self.last_error: NixMsgError | None = None
        #: Resolves when the client has stopped for good and released its tasks and threads.
        self.released: asyncio.Future[None] = loop.create_future()
        self.link = Link(
            loop,
            LinkOptions(
                address=address,
                endpoint_id=endpoint_id,
                password=credential.password if isinstance(credential, Password) else None,
                token=None if isinstance(credential, Password) else credential.token,
                keepalive=o.keepalive,
                connect_timeout=o.connect_timeout,
                max_receive_bytes=o.max_receive_bytes,
                client_name=CLIENT_NAME,
                ssl_context=_ssl_context(o),
                next_rid=self._next_rid,
            ),
            self,
        )

    # --- thread safe ----------------------------------------------------------------------------

    @property
    def session_token(self) -> str | None:
        return self.link.session_token

    def server_now(self) -> float:
        """The server's current time in Unix ms, as this client estimates it."""
        return time.time() * 1000 + self.offset_ms

    def issued_token(self) -> str | None:
        return self._issued_token

    def build_send(self, to: Recipient, body: str | bytes, options: SendOptions) -> dict[str, Any]:
        """The local checks of a send, before anything is queued (spec 9 "本地检查")."""
        if self.stop_error is not None:
            raise self.stop_error
        info = self.info
        limits = (
            Limits(info.max_body_bytes, info.max_meta_bytes, info.max_frame_bytes)
            if info is not None
            else DEFAULT_LIMITS
        )
        return build_send_frame(to, body, options, limits, self.offset_ms)

    # --- on the loop ------------------------------------------------------------------------------

    def start(self) -> None:
        self.link.start()

    def spawn(self, coro: Any) -> None:
        if self.released.done():
            coro.close()
            return
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ready(
        self, *, behind_callbacks: bool = True, timeout: float | None = None
    ) -> ServerInfo:
        """The server limits once online; raises when the client stops for good first. With
        ``behind_callbacks`` it returns after the callbacks of that state change have run;
        without (a wait from inside a callback), at once. After ``timeout`` seconds it raises
        ``timeout`` with the last transport error of the attempts as ``__cause__``."""
        if self.state == "online" and self.info is not None:
            return self.info
        if self.stop_error is not None:
            raise self.stop_error
        future: asyncio.Future[ServerInfo] = self.loop.create_future()
        (self._ready if behind_callbacks else self._ready_now).append(future)
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            future.cancel()
            last = self.last_error
            why = f"; last error: {last} ({last.__cause__!r})" if last is not None else ""
            raise local_error("timeout", f"Not online within {timeout} s{why}") from last

    async def send(self, frame: dict[str, Any]) -> SendResult:
        """Queues a checked send frame; resolves with the server's answer."""
        if self.stop_error is not None:
            raise self.stop_error
        result = self._queue.add(frame)
        self._pump()
        return await asyncio.shield(result)

    def in_callback(self) -> bool:
        """True inside an application callback run on this loop (the asyncio client)."""
        running = self.dispatcher.running
        return running is not None and asyncio.current_task() is running

    async def close(self, timeout: float = CLOSE_TIMEOUT, *, wait: bool = True) -> None:
        """Stops for good (checklist 17): messages not handed to the application yet stay
        unacked; the callback that runs now may finish; acks, requests and sends in flight get
        up to ``timeout`` seconds for their responses; then the link closes and whatever is left
        fails with ``closed``. Idempotent. With ``wait`` false (inside a callback, which close
        would otherwise wait for) it starts the close and returns."""
        if not timeout >= 0:
            raise ConfigError("close timeout must not be negative")
        if self._close_task is None:
            self._close_task = self.loop.create_task(self._close(timeout))
        if wait:
            await asyncio.shield(self._close_task)

    async def _close(self, timeout: float) -> None:
        deadline = self.loop.time() + timeout
        if not self.link.stopped:
            self.receiver.closing = True
            if self.link.online:
                # The callback running now returns first, so that its automatic ack is sent.
                await self._until(self.dispatcher.idle(), deadline)
                await self._drain_in_flight(deadline)
            await self.link.stop(StopCause("offline", "closed"))
        await self._release()

    async def _until(self, aw: asyncio.Future[Any], deadline: float) -> None:
        left = deadline - self.loop.time()
        if left > 0:
            await asyncio.wait({aw}, timeout=left)

    async def _drain_in_flight(self, deadline: float) -> None:
        """Waits (until ``deadline``) for every ack, request and published send to be answered."""
        while self.link.online:
            waiting: set[asyncio.Future[Any]] = {
                *self.receiver.tasks,
                *self._tasks,
                *self._pending.futures(),
                *self._queue.in_flight_futures(),
            }
            left = deadline - self.loop.time()
            if not waiting or left <= 0:
                return
            await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)

    async def _release(self) -> None:
        """After the stop: the final callbacks run (bounded), then every task of the client ends
        and ``released`` resolves; the clients end their threads then."""
        if self._release_task is None:
            self._release_task = self.loop.create_task(self._do_release())
        await asyncio.shield(self._release_task)

    async def _do_release(self) -> None:
        await self.link.ended()
        await self._until(self.dispatcher.idle(), self.loop.time() + _CALLBACKS_WAIT)
        self.receiver.release()
        self.sessions.release()
        self.connections.release()
        self.receiver.messages.release()
        tasks = {*self._tasks, *self.receiver.tasks}
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        if not self.released.done():
            self.released.set_result(None)

    async def request(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Sends a request frame and returns its ``resp.data`` (spec 6)."""
        if self.stop_error is not None:
            raise self.stop_error
        if not self.link.online:
            raise local_error("not_connected", "Not connected to the server")
        rid = self._next_rid()
        limits = self.info or DEFAULT_LIMITS
        text = encode_frame({"v": 1, "type": kind, "rid": rid, **fields}, limits.max_frame_bytes)
        answer = self._pending.wait(rid, kind)
        self.link.publish(text)
        return await answer

    def use_token(self, token: str) -> None:
        """A new session token from the server: reconnects use it, ``on_session`` gets it."""
        self.link.set_session_token(token)
        self._issued(token)

    async def stop_with(self, cause: StopCause, during: Callable[[], Any]) -> None:
        """Stops for good with ``cause``, also when the server closes the connection first."""
        if self.link.online:
            self.link.stop_on_close(cause)
        try:
            await during()
        finally:
            await self.link.stop(cause)

    async def watch_presence(self, watch: dict[str, Any]) -> None:
        await self.request("presence.watch", watch)
        self._watching = watch if watch["all"] or watch["ids"] else None

    def _next_rid(self) -> str:
        self._rid += 1
        return _base36(self._rid)

    def _issued(self, token: str) -> None:
        self._issued_token = token
        self.dispatcher.emit(self.sessions, token)

    def _flush_later(self, listeners: Listeners[Any]) -> None:
        try:
            self.loop.call_soon_threadsafe(self.dispatcher.flush, listeners)
        except RuntimeError:
            pass  # the loop is closed: the client is gone

    def _set_state(self, event: ConnectionEvent) -> None:
        self.state = event.state
        self.dispatcher.emit(self.connections, event)

    # --- LinkEvents -------------------------------------------------------------------------------

    def link_state(
        self,
        state: Literal["connecting", "online", "reconnecting"],
        reason: str,
        retry_in: float | None,
        error: BaseException | None = None,
    ) -> None:
        event_error: NixMsgError | None = None
        if state == "reconnecting":
            event_error = local_error("network", f"Connection attempt failed: {reason}")
            event_error.__cause__ = error
            self.last_error = event_error
        elif state == "online":
            self.last_error = None
        self._set_state(ConnectionEvent(state, reason, retry_in, event_error))
        if state == "online" and self.info is not None:
            info = self.info
            now, self._ready_now = self._ready_now, []
            for f in now:
                if not f.done():
                    f.set_result(info)
            # Resolved behind the state callbacks, so that they have run when ready() returns.
            async def wake() -> None:
                if self.state != "online":
                    return
                ready, self._ready = self._ready, []
                for f in ready:
                    if not f.done():
                        f.set_result(info)

            self.dispatcher.serial(wake)

    def link_online(self, hello: dict[str, Any], offset_ms: float, token: str | None) -> None:
        self.offset_ms = offset_ms
        if token is not None:
            self._issued(token)
        first = self.info is None
        self.info = to_server_info(hello)
        self._pump()
        if not first and self._watching is not None:
            # The server forgets presence watches with the connection (spec 6.5).
            self.spawn(self._rewatch(self._watching))

    async def _rewatch(self, watch: dict[str, Any]) -> None:
        try:
            await self.request("presence.watch", watch)
        except NixMsgError:
            pass

    def link_frame(self, f: dict[str, Any]) -> None:
        kind = f["type"]
        if kind == "resp":
            self._resp(f)
        elif kind == "msg":
            msg = to_message(f)
            if msg is not None:
                self.receiver.message(msg)
        elif kind == "receipt":
            self.receiver.receipt(to_receipt(f))
        elif kind == "revoked":
            self.receiver.revoke(to_revoked(f))
        elif kind == "presence":
            self.receiver.presence_event(to_presence(f))
        elif kind == "group_event":
            self.receiver.group_event(to_group_event(f))

    def link_down(self) -> None:
        self._down(local_error("not_connected", "Connection lost"))

    def link_stopped(self, cause: StopCause) -> None:
        if self._pump_timer is not None:
            self._pump_timer.cancel()
        code = "closed" if cause.state == "offline" else cause.state
        error = StoppedError(code, f"Client stopped: {cause.reason}", reason=cause.reason)
        self.stop_error = error
        self._down(error)
        self._queue.close(error)
        ready = self._ready + self._ready_now
        self._ready, self._ready_now = [], []
        for f in ready:
            if not f.done():
                f.set_exception(error)
        self._set_state(
            ConnectionEvent(cause.state, cause.reason, None, None if cause.state == "offline" else error)
        )
        if self._close_task is None and self._release_task is None:
            # Stopped for good without close (kicked, auth_failed, logout): release at once.
            self._release_task = self.loop.create_task(self._do_release())

    # --- internals ---------------------------------------------------------------------------------

    def _resp(self, f: dict[str, Any]) -> None:
        rid = str(f.get("rid"))
        ok = f.get("ok") is True
        error = None if ok else resp_error(f)
        if self._queue.has(rid):
            self._queue.settle(rid, ok=ok, data=f.get("data"), error=error, now=time.monotonic())
            self._pump()
            return
        self._pending.settle(rid, ok, f.get("data"), error)

    async def _send_ack(self, sender: str, message_id: str) -> str | None:
        if not self.link.online:
            return None
        try:
            d = await self.request("ack", {"from": sender, "id": message_id})
        except NixMsgError:
            return None
        result = d.get("result")
        return result if isinstance(result, str) else None

    def _send_receipt_ack(self, receipt_id: str) -> None:
        if self.link.online:
            self.spawn(self._receipt_ack(receipt_id))

    async def _receipt_ack(self, receipt_id: str) -> None:
        try:
            await self.request("receipt_ack", {"receipt_id": receipt_id})
        except NixMsgError:
            pass

    def _pump(self) -> None:
        if self._pump_timer is not None:
            self._pump_timer.cancel()
            self._pump_timer = None
        if not self.link.online:
            return
        now = time.monotonic()
        while (taken := self._queue.take(now, self._next_rid)) is not None:
            rid, frame = taken
            self.link.publish(encode_frame(frame_for(rid, frame), 1 << 62))
        due = self._queue.next_due_at(now)
        if due is not None:
            self._pump_timer = self.loop.call_later(due - now, self._pump)

    def _down(self, error: NixMsgError) -> None:
        self._queue.requeue_in_flight()
        self._pending.fail_all(error)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out
