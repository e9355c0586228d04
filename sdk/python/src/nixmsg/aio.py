"""The asyncio NixMsg client: the same methods as :class:`nixmsg.NixMsgClient`, as coroutines,
with sync or async callbacks run one at a time on the application's event loop."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import ssl
from collections.abc import Callable, Sequence
from typing import Any, Literal

from . import calls
from .client import checked, credential_of
from .core import CLOSE_TIMEOUT, ClientCore
from .groups import AsyncGroupApi
from .register import register
from .types import (
    ConnectionEvent,
    ConnectionState,
    ConnectOptions,
    Credential,
    DirectoryPage,
    GroupEvent,
    JsonObject,
    Message,
    PresenceEvent,
    PresenceInfo,
    Receipt,
    RecallResult,
    Recipient,
    RegisterResult,
    Revoked,
    SelfInfo,
    SendOptions,
    SendResult,
    ServerInfo,
    StatusResult,
)


async def _invoke(fn: Callable[[Any], Any], arg: Any) -> None:
    result = fn(arg)
    if inspect.isawaitable(result):
        await result


class AsyncNixMsgClient:
    """A connection to a NixMsg server as one endpoint, for asyncio. Create it with
    :meth:`connect` inside a running event loop. Callbacks may be plain functions or coroutine
    functions; they run serially on the loop, and a message is acked (auto mode) after its
    callback has finished.

    Example::

        client = AsyncNixMsgClient.connect("wss://relay.example/mqtt", "door-1", password=pw)

        async def handle(msg: nixmsg.Message) -> None:
            print(msg.sender, msg.body)

        client.on_message(handle)
        await client.ready()
        await client.send("app-1", "opened")
        await client.close()
    """

    def __init__(
        self, url: str, endpoint_id: str, credential: Credential, options: ConnectOptions
    ) -> None:
        loop = asyncio.get_running_loop()
        self._core = ClientCore(loop, _invoke, url, endpoint_id, credential, options)
        #: Group operations (spec 6.7).
        self.groups = AsyncGroupApi(self._core)
        loop.call_soon(self._core.start)

    @classmethod
    def connect(
        cls,
        url: str,
        endpoint_id: str,
        *,
        password: str | None = None,
        session_token: str | None = None,
        options: ConnectOptions | None = None,
    ) -> AsyncNixMsgClient:
        """Creates a client on the running loop and starts connecting (see
        :meth:`nixmsg.NixMsgClient.connect`)."""
        return cls(url, endpoint_id, credential_of(password, session_token), options or ConnectOptions())

    @staticmethod
    async def register(
        url: str,
        registration_code: str,
        *,
        id: str = "",  # noqa: A002 - the spec's field name
        login_password: str = "",
        name: str = "",
        talk_password: str = "",
        timeout: float = 30.0,
        ca_file: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> RegisterResult:
        """:func:`nixmsg.register` in a worker thread."""
        return await asyncio.to_thread(
            register,
            url,
            registration_code,
            id=id,
            login_password=login_password,
            name=name,
            talk_password=talk_password,
            timeout=timeout,
            ca_file=ca_file,
            ssl_context=ssl_context,
        )

    @property
    def endpoint_id(self) -> str:
        return self._core.endpoint_id

    @property
    def state(self) -> ConnectionState:
        return self._core.state

    @property
    def server_info(self) -> ServerInfo | None:
        return self._core.info

    @property
    def clock_offset_ms(self) -> float:
        return self._core.offset_ms

    @property
    def session_token(self) -> str | None:
        return self._core.session_token

    def server_now(self) -> float:
        return self._core.server_now()

    async def ready(self, timeout: float | None = None) -> ServerInfo:
        """Waits until online and returns the server limits; raises the stop error when the
        client stops for good first, ``timeout`` after ``timeout`` seconds (with the last
        transport error as ``__cause__``)."""
        return await self._core.ready(timeout=timeout)

    def on_session(self, handler: Callable[[str], Any]) -> Callable[[], None]:
        """See :meth:`nixmsg.NixMsgClient.on_session`."""
        checked(handler)
        core = self._core
        token = core.issued_token()
        if token is not None:

            async def first() -> None:
                await _invoke(handler, token)

            core.dispatcher.serial(first)
        return core.sessions.add(handler)

    def on_connection(self, handler: Callable[[ConnectionEvent], Any]) -> Callable[[], None]:
        return self._core.connections.add(checked(handler))

    def on_message(self, handler: Callable[[Message], Any]) -> Callable[[], None]:
        return self._core.receiver.messages.add(checked(handler))

    def on_receipt(self, handler: Callable[[Receipt], Any]) -> Callable[[], None]:
        return self._core.receiver.receipts.add(checked(handler))

    def on_revoked(self, handler: Callable[[Revoked], Any]) -> Callable[[], None]:
        return self._core.receiver.revoked.add(checked(handler))

    def on_presence(self, handler: Callable[[PresenceEvent], Any]) -> Callable[[], None]:
        return self._core.receiver.presence.add(checked(handler))

    def on_group_event(self, handler: Callable[[GroupEvent], Any]) -> Callable[[], None]:
        return self._core.receiver.group_events.add(checked(handler))

    async def send(
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
    ) -> SendResult:
        """See :meth:`nixmsg.NixMsgClient.send`. Cancelling the wait leaves the send queued."""
        options = SendOptions(send_at, delay, keep, ttl, receipt, talk_password, content_type, meta, id)
        frame = self._core.build_send(to, body, options)
        return await self._core.send(frame)

    async def recall(self, message_id: str) -> RecallResult:
        return await calls.recall(self._core, message_id)

    async def status(self, message_id: str, cursor: str = "", limit: int = 100) -> StatusResult:
        return await calls.status(self._core, message_id, cursor, limit)

    async def unlock(self, endpoint_id: str, talk_password: str) -> None:
        await calls.unlock(self._core, endpoint_id, talk_password)

    async def ack(self, message: Message) -> None:
        await self._core.receiver.ack(message.sender, message.id)

    async def presence(self, ids: Sequence[str]) -> list[PresenceInfo]:
        return await calls.presence(self._core, ids)

    async def directory(self, cursor: str = "", query: str = "", limit: int = 100) -> DirectoryPage:
        return await calls.directory(self._core, cursor, query, limit)

    async def watch_presence(self, ids: Sequence[str] | Literal["all"]) -> None:
        await calls.watch_presence(self._core, ids)

    async def get_self(self) -> SelfInfo:
        return await calls.get_self(self._core)

    async def update_self(self, *, name: str | None = None, default_delay_ms: int | None = None) -> None:
        await calls.update_self(self._core, name, default_delay_ms)

    async def set_talk_password(self, talk_password: str) -> None:
        await calls.set_talk_password(self._core, talk_password)

    async def change_login_password(self, old_password: str, new_password: str) -> None:
        await calls.change_login_password(self._core, old_password, new_password)

    async def logout(self) -> None:
        await calls.logout(self._core)

    async def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Disconnects and stops for good; see :meth:`nixmsg.NixMsgClient.close`. When it
        returns, none of the client's tasks or threads is left. Inside a callback it starts the
        close and returns; the close completes after the callback returns."""
        core = self._core
        await core.close(timeout, wait=not core.in_callback())

    async def __aenter__(self) -> AsyncNixMsgClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
