"""The synchronous NixMsg client (spec 9): blocking calls, callbacks on one worker thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from . import calls
from .core import CLOSE_TIMEOUT, ClientCore
from .errors import ConfigError, NixMsgError, StoppedError, local_error
from .groups import GroupApi
from .types import (
    ConnectionEvent,
    ConnectionState,
    ConnectOptions,
    Credential,
    DirectoryPage,
    GroupEvent,
    JsonObject,
    Message,
    Password,
    PresenceEvent,
    PresenceInfo,
    Receipt,
    RecallResult,
    Recipient,
    Revoked,
    SelfInfo,
    SendOptions,
    SendResult,
    ServerInfo,
    SessionToken,
    StatusResult,
)

T = TypeVar("T")

#: How long ``close`` waits for the client's threads beyond its own bound, in seconds.
_THREAD_WAIT = 5.0


def checked(handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``handler`` when it is callable; a missing callback fails where it is added."""
    if not callable(handler):
        raise ConfigError(f"The callback must be callable, not {type(handler).__name__}")
    return handler


def credential_of(password: str | None, session_token: str | None) -> Credential:
    """The credential from ``connect``'s keyword arguments: exactly one of them."""
    if (password is None) == (session_token is None):
        raise ConfigError("Give either password or session_token")
    return Password(password) if password is not None else SessionToken(session_token or "")


class NixMsgClient:
    """A connection to a NixMsg server as one endpoint. Create it with :meth:`connect`; it
    connects in the background and reconnects until it is closed, logged out, taken over, or
    refused (spec 9). Methods block until the server answers; callbacks run one at a time on the
    client's callback thread, and may call the client's methods.

    Example::

        client = NixMsgClient.connect("wss://relay.example/mqtt", "door-1", password=pw)
        client.on_message(lambda msg: print(msg.sender, msg.body))
        client.ready(timeout=30)
        client.send("app-1", "opened")
        client.close()
    """

    def __init__(
        self, url: str, endpoint_id: str, credential: Credential, options: ConnectOptions
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._worker = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="nixmsg-callbacks"
        )
        self._worker_thread: threading.Thread | None = None
        self._core = ClientCore(self._loop, self._invoke, url, endpoint_id, credential, options)
        self._shut = False
        self._shut_lock = threading.Lock()
        #: Set (under ``_shut_lock``) once the loop has stopped for good.
        self._loop_ending = False
        #: Calls submitted whose coroutine the loop has not started yet.
        self._submitted: dict[concurrent.futures.Future[Any], Coroutine[Any, Any, Any]] = {}
        self._thread = threading.Thread(target=self._run, name="nixmsg-core", daemon=True)
        #: Group operations (spec 6.7).
        self.groups = GroupApi(self._call, self._core)
        self._loop.call_soon(self._core.start)
        self._thread.start()

    @classmethod
    def connect(
        cls,
        url: str,
        endpoint_id: str,
        *,
        password: str | None = None,
        session_token: str | None = None,
        options: ConnectOptions | None = None,
    ) -> NixMsgClient:
        """Creates a client and starts connecting: WebSocket to ``<url>/mqtt`` unless
        ``options.transport`` is ``"tcp"``. Give the login ``password`` or a saved
        ``session_token``. Add callbacks right away; messages wait (unacked) until ``on_message``
        has one.

        Example::

            client = NixMsgClient.connect(
                "ws://127.0.0.1:7443/mqtt", "dev-1", session_token=saved,
                options=ConnectOptions(ack_mode="manual"),
            )
        """
        return cls(url, endpoint_id, credential_of(password, session_token), options or ConnectOptions())

    # --- plumbing -------------------------------------------------------------------------------

    def _run(self) -> None:
        """The core thread: the loop runs until the client has stopped for good and released
        its tasks (close, logout, kicked, auth_failed); then the thread ends."""
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._core.released)
        finally:
            with self._shut_lock:
                self._loop_ending = True  # calls submitted from now on fail at once
            # As asyncio.run does: what is left is cancelled and awaited, so that no task is
            # destroyed while pending.
            left = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in left:
                t.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            self._worker.shutdown(wait=False)
            loop.close()
            # Calls submitted before the loop ended whose start it never ran: they fail with the
            # stop, their coroutines are closed (never left unawaited).
            with self._shut_lock:
                left_calls = list(self._submitted.items())
                self._submitted.clear()
            for future, coro in left_calls:
                coro.close()
                if future.set_running_or_notify_cancel():
                    future.set_exception(self._stopped_error())

    def _stopped_error(self) -> NixMsgError:
        return self._core.stop_error or StoppedError("closed", "Client closed", reason="closed")

    async def _invoke(self, fn: Callable[[Any], Any], arg: Any) -> None:
        def run() -> None:
            self._worker_thread = threading.current_thread()
            fn(arg)

        await self._loop.run_in_executor(self._worker, run)

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Runs ``coro`` on the loop; its future fails with the stop error when the client
        stops for good before the loop started it (``asyncio.run_coroutine_threadsafe`` would
        leave both pending, and the coroutine never awaited, when the loop ends first)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._shut_lock:
            stopped = self._shut or self._loop_ending or self._core.released.done()
            if not stopped:
                self._submitted[future] = coro
        if stopped:
            coro.close()
            raise self._stopped_error()

        def begin() -> None:
            with self._shut_lock:
                mine = self._submitted.pop(future, None)
                ending = self._loop_ending
            if mine is None:
                return  # failed by the loop's end already
            if future.cancelled() or ending:
                mine.close()
                if future.set_running_or_notify_cancel():
                    future.set_exception(self._stopped_error())
                return
            task = self._loop.create_task(mine)

            def done(t: asyncio.Task[T]) -> None:
                if not future.set_running_or_notify_cancel():
                    return  # the caller cancelled it (a timeout)
                if t.cancelled():
                    future.set_exception(self._stopped_error())  # cancelled as the loop ended
                elif (error := t.exception()) is not None:
                    future.set_exception(error)
                else:
                    future.set_result(t.result())

            task.add_done_callback(done)

            def cancel_task() -> None:
                task.cancel()

            # The caller's cancel (a timeout) reaches the task on the loop.
            future.add_done_callback(lambda f: self._on_loop(cancel_task) if f.cancelled() else None)

        try:
            self._loop.call_soon_threadsafe(begin)
        except RuntimeError:  # the loop has closed: the client stopped for good
            with self._shut_lock:
                self._submitted.pop(future, None)
            coro.close()
            raise self._stopped_error() from None
        return future

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = self._submit(coro)
        try:
            return future.result(timeout)
        except NixMsgError:
            raise  # a RequestTimeoutError is a TimeoutError too: not the wait's own timeout
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise local_error("timeout", f"No answer within {timeout} s") from None
        except concurrent.futures.CancelledError:  # ended with the loop
            raise self._stopped_error() from None

    def _on_loop(self, fn: Callable[[], None]) -> None:
        try:
            self._loop.call_soon_threadsafe(fn)
        except RuntimeError:
            pass  # the loop has ended: the client stopped for good

    # --- state ------------------------------------------------------------------------------------

    @property
    def endpoint_id(self) -> str:
        return self._core.endpoint_id

    @property
    def state(self) -> ConnectionState:
        """The current connection state."""
        return self._core.state

    @property
    def server_info(self) -> ServerInfo | None:
        """Limits from the last handshake, or None before the first."""
        return self._core.info

    @property
    def clock_offset_ms(self) -> float:
        """Server clock minus local clock, in ms, measured at the last handshake (spec 9)."""
        return self._core.offset_ms

    @property
    def session_token(self) -> str | None:
        """The session token reconnects use; None until a password login completes."""
        return self._core.session_token

    def server_now(self) -> float:
        """The server's current time in Unix ms, as this client estimates it."""
        return self._core.server_now()

    def ready(self, timeout: float | None = None) -> ServerInfo:
        """Blocks until online and returns the server limits; raises the stop error when the
        client stops for good first (``kicked``, ``auth_failed``, ``closed``), ``timeout`` when
        ``timeout`` seconds pass (with the last transport error, a refused connection or a TLS
        failure, as ``__cause__``). Outside callbacks it returns after the callbacks of the
        ``online`` change have run."""
        in_callback = threading.current_thread() is self._worker_thread
        coro = self._core.ready(behind_callbacks=not in_callback, timeout=timeout)
        return self._call(coro, None if timeout is None else timeout + _THREAD_WAIT)

    # --- callbacks ----------------------------------------------------------------------------------

    def on_session(self, handler: Callable[[str], Any]) -> Callable[[], None]:
        """Called with each new session token: after a password login and after
        ``change_login_password``. Save it and connect with ``session_token=`` next time. A token
        issued before the callback was added is passed to it at once."""
        checked(handler)
        core = self._core
        removed = threading.Event()
        remover: list[Callable[[], None]] = []

        def add() -> None:
            if removed.is_set():
                return
            token = core.issued_token()
            if token is not None:

                async def first() -> None:
                    await self._invoke(handler, token)

                core.dispatcher.serial(first)
            remover.append(core.sessions.add(handler))

        self._on_loop(add)

        def remove() -> None:
            removed.set()

            def drop() -> None:
                for r in remover:
                    r()

            self._on_loop(drop)

        return remove

    def on_connection(self, handler: Callable[[ConnectionEvent], Any]) -> Callable[[], None]:
        """Called on every connection state change (spec 9)."""
        return self._core.connections.add(checked(handler))

    def on_message(self, handler: Callable[[Message], Any]) -> Callable[[], None]:
        """Called once per received message, serially. In auto mode the message is acked when
        the callback returns; an exception leaves it unacked for a re-push."""
        return self._core.receiver.messages.add(checked(handler))

    def on_receipt(self, handler: Callable[[Receipt], Any]) -> Callable[[], None]:
        """Called once per receipt (spec 6.4); receipts are acked after the callback returns."""
        return self._core.receiver.receipts.add(checked(handler))

    def on_revoked(self, handler: Callable[[Revoked], Any]) -> Callable[[], None]:
        """Called when a message handed to the application was withdrawn before its ack."""
        return self._core.receiver.revoked.add(checked(handler))

    def on_presence(self, handler: Callable[[PresenceEvent], Any]) -> Callable[[], None]:
        """Called with online/offline notices of watched endpoints (spec 6.5)."""
        return self._core.receiver.presence.add(checked(handler))

    def on_group_event(self, handler: Callable[[GroupEvent], Any]) -> Callable[[], None]:
        """Called with changes of groups this endpoint is in (spec 6.7)."""
        return self._core.receiver.group_events.add(checked(handler))

    # --- messages ----------------------------------------------------------------------------------

    def send_nowait(
        self,
        to: Recipient,
        body: str | bytes,
        *,
        send_at: datetime.datetime | int | float | None = None,
        delay: int | None = None,
        keep: bool | None = None,
        ttl: int | None = None,
        receipt: bool | None = None,
        talk_password: str | None = None,
        content_type: str | None = None,
        meta: JsonObject | None = None,
        id: str | None = None,  # noqa: A002 - the spec's field name
    ) -> concurrent.futures.Future[SendResult]:
        """Like :meth:`send`, but returns a future at once. Local checks still raise here."""
        options = SendOptions(
            send_at, delay, keep, ttl, receipt, talk_password, content_type, meta, id
        )
        if self._shut:
            raise self._stopped_error()
        frame = self._core.build_send(to, body, options)
        return self._submit(self._core.send(frame))

    def send(
        self,
        to: Recipient,
        body: str | bytes,
        *,
        send_at: datetime.datetime | int | float | None = None,
        delay: int | None = None,
        keep: bool | None = None,
        ttl: int | None = None,
        receipt: bool | None = None,
        talk_password: str | None = None,
        content_type: str | None = None,
        meta: JsonObject | None = None,
        id: str | None = None,  # noqa: A002 - the spec's field name
        timeout: float | None = None,
    ) -> SendResult:
        """Sends a message (spec 6.2) and returns the server's answer. Works while disconnected:
        the send waits in the queue and is resent with the same id and content after a
        reconnect. ``str`` bodies go as text, ``bytes`` as binary. Raises ``body_too_large``,
        ``meta_too_large``, ``frame_too_large`` or ``queue_full`` locally. When ``timeout``
        seconds pass first, raises ``timeout``; the send stays queued.

        Example::

            r = client.send("door-1", "open", keep=True, ttl=3600)
            client.send(Target.group("g_ab12cd34"), b"\\x01\\x02", delay=10_000)
        """
        future = self.send_nowait(
            to,
            body,
            send_at=send_at,
            delay=delay,
            keep=keep,
            ttl=ttl,
            receipt=receipt,
            talk_password=talk_password,
            content_type=content_type,
            meta=meta,
            id=id,
        )
        try:
            return future.result(timeout)
        except NixMsgError:
            raise
        except concurrent.futures.TimeoutError:
            raise local_error("timeout", f"No answer within {timeout} s") from None
        except concurrent.futures.CancelledError:
            raise self._stopped_error() from None

    def recall(self, message_id: str) -> RecallResult:
        """Recalls a sent message (spec 6.4)."""
        return self._call(calls.recall(self._core, message_id))

    def status(self, message_id: str, cursor: str = "", limit: int = 100) -> StatusResult:
        """Status of a sent message with one page of recipients (spec 6.4)."""
        return self._call(calls.status(self._core, message_id, cursor, limit))

    def unlock(self, endpoint_id: str, talk_password: str) -> None:
        """Proves the talk password of ``endpoint_id`` so later sends need none (spec 6.6)."""
        self._call(calls.unlock(self._core, endpoint_id, talk_password))

    def ack(self, message: Message) -> None:
        """Acks a message in manual mode (spec 6.3). When disconnected, the ack is sent when the
        server pushes the message again after the reconnect."""
        self._call(self._core.receiver.ack(message.sender, message.id))

    # --- presence and profile ------------------------------------------------------------------------

    def presence(self, ids: Sequence[str]) -> list[PresenceInfo]:
        """Online state of up to 200 endpoints (spec 6.5)."""
        return self._call(calls.presence(self._core, ids))

    def directory(self, cursor: str = "", query: str = "", limit: int = 100) -> DirectoryPage:
        """One page of the endpoint directory; ``query`` matches id prefix or name (spec 6.5)."""
        return self._call(calls.directory(self._core, cursor, query, limit))

    def watch_presence(self, ids: Sequence[str] | Literal["all"]) -> None:
        """Subscribes to presence notices of ``ids``, or of every endpoint with ``"all"``;
        replaces the previous call and is repeated after each reconnect (spec 6.5)."""
        self._call(calls.watch_presence(self._core, ids))

    def get_self(self) -> SelfInfo:
        """This endpoint's profile (spec 6.6)."""
        return self._call(calls.get_self(self._core))

    def update_self(self, *, name: str | None = None, default_delay_ms: int | None = None) -> None:
        """Changes the name and/or the default delay (spec 6.6)."""
        self._call(calls.update_self(self._core, name, default_delay_ms))

    def set_talk_password(self, talk_password: str) -> None:
        """Sets the talk password; "" clears it. Earlier grants stop working (spec 6.6)."""
        self._call(calls.set_talk_password(self._core, talk_password))

    def change_login_password(self, old_password: str, new_password: str) -> None:
        """Changes the login password (spec 6.6). The new session token goes to ``on_session``
        and is used for reconnects; the old one stops working."""
        self._call(calls.change_login_password(self._core, old_password, new_password))

    # --- ending -------------------------------------------------------------------------------------

    def logout(self) -> None:
        """Invalidates the session token on the server and stops for good (spec 6.6). Pending
        sends fail with ``closed``."""
        try:
            self._call(calls.logout(self._core))
        finally:
            self._shut = True
            self._join(CLOSE_TIMEOUT)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Disconnects and stops for good (checklist 17). Messages not handed to ``on_message``
        yet stay unacked for the next login; the callback running now may finish and its
        message is acked; acks, requests and sends in flight get up to ``timeout`` seconds for
        their answers; what is left then fails with ``closed``. Returns when the client's
        threads have ended (within ``timeout`` plus a few seconds for the network thread).
        Idempotent, from any state. Inside a callback it starts the close and returns at once;
        the close completes after the callback returns. Every later call raises ``closed``."""
        if not timeout >= 0:
            raise ConfigError("close timeout must not be negative")
        with self._shut_lock:
            self._shut = True
        in_callback = threading.current_thread() is self._worker_thread
        # The close coroutine is made on the loop, never here: a loop that ends before it runs
        # the callback (the client stopped for good meanwhile) then leaves no coroutine unawaited.
        closed: concurrent.futures.Future[None] = concurrent.futures.Future()

        def begin() -> None:
            if not closed.set_running_or_notify_cancel():
                return
            task = self._loop.create_task(self._core.close(timeout, wait=not in_callback))

            def done(t: asyncio.Task[None]) -> None:
                if t.cancelled():
                    closed.set_exception(concurrent.futures.CancelledError())
                elif (error := t.exception()) is not None:
                    closed.set_exception(error)
                else:
                    closed.set_result(None)

            task.add_done_callback(done)

        if self._core.released.done():
            closed.cancel()  # stopped for good already: nothing to drain, the threads are ending
        else:
            self._on_loop(begin)
        if in_callback:
            return
        bound = time.monotonic() + timeout + _THREAD_WAIT
        # Waits for the close, or for the core thread to end without running it (it had stopped).
        while not closed.done() and self._thread.is_alive() and time.monotonic() < bound:
            concurrent.futures.wait([closed], timeout=0.05)
        self._join(_THREAD_WAIT)

    def _join(self, bound: float) -> None:
        if threading.current_thread() in (self._thread, self._worker_thread):
            return
        self._thread.join(bound)
        self._worker.shutdown(wait=False)
        worker = self._worker_thread
        if worker is not None and worker is not threading.current_thread():
            worker.join(bound)

    def __enter__(self) -> NixMsgClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
