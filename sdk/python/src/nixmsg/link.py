"""One logical connection to the server and its reconnect loop (spec 5, 6.1, 9 "连接").

paho-mqtt runs without its own reconnect: every attempt is a new paho client on its own network
thread (``Client.loop`` until the connection ends), so that each CONNECT carries Clean Start and
session expiry 0 (spec 9 step 2). Everything else happens on the client's event loop: paho's
callbacks are posted to it, and this class decides when and how to connect again.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .backoff import Backoff
from .body import dumps
from .url import Address

#: MQTT 5 DISCONNECT reason: another connection took the session over (spec 5).
SESSION_TAKEN_OVER = 0x8E
#: CONNACK codes that end reconnecting (spec 9 step 6).
AUTH_REFUSED = frozenset({0x86, 0x87, 0x8A})
#: Longest wait for a clean MQTT close before the socket is dropped, in seconds.
CLOSE_WAIT = 2.0
#: Online this long resets the backoff (spec 9 step 4), in seconds.
STABLE = 60.0


@dataclass(frozen=True)
class LinkOptions:
    """Settings of a :class:`Link`."""

    address: Address
    endpoint_id: str
    password: str | None
    token: str | None
    keepalive: int
    connect_timeout: float
    max_receive_bytes: int
    client_name: str
    ssl_context: ssl.SSLContext | None
    next_rid: Callable[[], str]
    random: Callable[[], float] | None = None


@dataclass(frozen=True)
class StopCause:
    """Why the link stopped for good."""

    state: Literal["kicked", "auth_failed", "offline"]
    reason: str


class LinkEvents(Protocol):
    """What a :class:`Link` reports to its owner, on the event loop."""

    def link_state(
        self,
        state: Literal["connecting", "online", "reconnecting"],
        reason: str,
        retry_in: float | None,
        error: BaseException | None = None,
    ) -> None:
        """``connecting``, ``online`` or ``reconnecting``; stops are reported by ``link_stopped``.
        ``error`` is what ended the last attempt, when it was an exception (refused, DNS, TLS)."""

    def link_online(self, hello: dict[str, Any], offset_ms: float, token: str | None) -> None:
        """The handshake succeeded. ``token`` is the new session token of a password login."""

    def link_frame(self, frame: dict[str, Any]) -> None:
        """A downlink frame other than the ``hello`` response and ``fatal``, while online."""

    def link_down(self) -> None:
        """An online connection was lost; requests in flight will get no response."""

    def link_stopped(self, cause: StopCause) -> None:
        """The link stopped for good; it will not connect again."""


def _now_ms() -> float:
    return time.time() * 1000


class _Connection:
    """One attempt: a paho client and the thread that runs its network loop."""

    def __init__(self, link: Link, password: str) -> None:
        o = link.options
        self.link = link
        self.loop = link.loop
        self.drop_reason = "connection_closed"
        self.drop_error: BaseException | None = None
        self.hello_rid = ""
        self.hello_sent_at = 0.0
        self.ended: asyncio.Future[None] = link.loop.create_future()
        self._closing = threading.Event()
        transport: Literal["websockets", "tcp"] = (
            "websockets" if o.address.transport == "websocket" else "tcp"
        )
        c = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=o.endpoint_id,
            protocol=mqtt.MQTTv5,
            transport=transport,
            reconnect_on_failure=False,
        )
        c.username_pw_set(o.endpoint_id, password)
        if transport == "websockets":
            # paho sends the subprotocol "mqtt" (spec 9 step 1).
            c.ws_set_options(path=o.address.path)
        if o.address.tls:
            c.tls_set_context(o.ssl_context or ssl.create_default_context())
        c.connect_timeout = o.connect_timeout
        c.on_socket_open = self._socket_open
        # publish, subscribe and disconnect are called from the event loop. Without an external
        # write callback paho would write to the socket from that thread, concurrently with the
        # network thread (corrupting WebSocket frames); with one, it only queues the packet and
        # wakes the network thread, which does all the writing.
        c.on_socket_register_write = self._socket_write_wanted
        c.on_connect = self._on_connect
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.on_disconnect = self._on_disconnect
        self.client = c
        self.thread = threading.Thread(target=self._run, name="nixmsg-network", daemon=True)

    # --- network thread ---------------------------------------------------------------------

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the event loop is gone: the client was closed

    @staticmethod
    def _socket_open(_c: mqtt.Client, _u: Any, sock: Any) -> None:
        # Requests and their PUBACKs are small writes: without TCP_NODELAY a round trip waits for
        # the server's delayed ACK (as in the TypeScript SDK's transport.ts).
        raw = getattr(sock, "_socket", sock)
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (AttributeError, OSError):
            pass

    @staticmethod
    def _socket_write_wanted(_c: mqtt.Client, _u: Any, _sock: Any) -> None:
        pass  # the network thread's select already watches the socket

    def _on_connect(self, _c: mqtt.Client, _u: Any, _f: Any, rc: Any, _p: Any) -> None:
        self._post(self.link._connack, self, int(rc.value))

    def _on_subscribe(self, _c: mqtt.Client, _u: Any, _mid: int, codes: list[Any], _p: Any) -> None:
        self._post(self.link._suback, self, [int(x.value) for x in codes])

    def _on_message(self, _c: mqtt.Client, _u: Any, msg: mqtt.MQTTMessage) -> None:
        self._post(self.link._payload, self, bytes(msg.payload))

    def _on_disconnect(self, _c: mqtt.Client, _u: Any, flags: Any, rc: Any, _p: Any) -> None:
        if flags.is_disconnect_packet_from_server:
            self._post(self.link._disconnect_packet, self, int(rc.value))

    def _run(self) -> None:
        o = self.link.options
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 0
        try:
            self.client.connect(
                o.address.host, o.address.port, o.keepalive, clean_start=True, properties=props
            )
        except Exception as err:  # noqa: BLE001 - any failure to open the socket is a network error
            reason = "tls_error" if isinstance(err, ssl.SSLError) else "network_error"
            self._post(self.link._closed, self, reason, err)
            return
        deadline: float | None = None
        while True:
            if self._closing.is_set():
                if deadline is None:
                    deadline = time.monotonic() + CLOSE_WAIT
                    self.client.disconnect()
                elif time.monotonic() > deadline:
                    break
            try:
                rc = self.client.loop(timeout=0.1 if deadline else 1.0)
            except Exception as err:  # noqa: BLE001 - a broken socket inside paho
                self.drop_error = err
                break
            if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                break
        sock = self.client.socket()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        # Each attempt has its own paho client: release its wake-up socket pair now rather than
        # when the garbage collector gets to it.
        for pair in (self.client._sockpairR, self.client._sockpairW):
            if pair is not None:
                pair.close()
        self._post(self.link._closed, self, None)

    # --- event loop ---------------------------------------------------------------------------

    def publish(self, text: str) -> None:
        try:
            self.client.publish(f"nix/c/{self.link.options.endpoint_id}/up", text.encode("utf-8"), qos=1)
        except (OSError, ValueError):
            pass  # the network thread has just ended; its close is on the way to the loop

    def subscribe(self) -> None:
        try:
            self.client.subscribe(f"nix/c/{self.link.options.endpoint_id}/down", qos=1)
        except (OSError, ValueError):
            pass

    def end(self) -> None:
        """Sends DISCONNECT and closes; the thread gives up after :data:`CLOSE_WAIT`."""
        self._closing.set()
        try:
            self.client.disconnect()
        except Exception:  # noqa: BLE001 - not connected yet
            pass


class Link:
    """Connects, subscribes to the down topic, performs ``hello``, and reconnects with backoff
    until it is stopped: by ``fatal``, a 0x8E takeover, an authentication refusal, or the owner.
    All methods run on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, options: LinkOptions, events: LinkEvents) -> None:
        self.loop = loop
        self.options = options
        self._events = events
        self._backoff = Backoff(random=options.random)
        self._password = options.password
        self._token = options.token
        self._conn: _Connection | None = None
        self._online = False
        self._online_since = 0.0
        self._stopped = False
        self._close_means: StopCause | None = None
        self._attempt_timer: asyncio.TimerHandle | None = None
        self._retry_timer: asyncio.TimerHandle | None = None
        # The network threads that have not ended yet (one per attempt, an old one may linger).
        self._live: set[asyncio.Future[None]] = set()

    @property
    def online(self) -> bool:
        """True between a successful ``hello`` and the loss of that connection."""
        return self._online

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def session_token(self) -> str | None:
        """The session token reconnects use, if any."""
        return self._token

    def set_session_token(self, token: str) -> None:
        """Replaces the session token (after ``self.login_password``, spec 6.6)."""
        self._token = token
        self._password = None

    def start(self) -> None:
        """Starts the first connection attempt."""
        if self._stopped or self._conn is not None:
            return
        self._events.link_state("connecting", "", None)
        self._open()

    def publish(self, text: str) -> bool:
        """Publishes a frame on the up topic, in order; False when not online."""
        if not self._online or self._conn is None:
            return False
        self._conn.publish(text)
        return True

    def stop_on_close(self, cause: StopCause) -> None:
        """When the current connection closes, stop with ``cause`` instead of reconnecting."""
        self._close_means = cause

    def halt(self, cause: StopCause) -> None:
        """Stops for good at once: no further attempt, the connection is closed in the
        background."""
        if self._stopped:
            return
        self._stopped = True
        self._cancel_timers()
        conn, self._conn = self._conn, None
        self._online = False
        if conn is not None:
            conn.end()
        self._events.link_stopped(cause)

    async def stop(self, cause: StopCause) -> None:
        """Stops for good; returns once the network thread has ended (bounded)."""
        self.halt(cause)
        await self.ended()

    async def ended(self) -> None:
        """Returns once the last network thread has ended (bounded by :data:`CLOSE_WAIT` + 1 s)."""
        if self._live:
            await asyncio.wait(set(self._live), timeout=CLOSE_WAIT + 1)

    def _cancel_timers(self) -> None:
        for t in (self._attempt_timer, self._retry_timer):
            if t is not None:
                t.cancel()
        self._attempt_timer = self._retry_timer = None

    def _open(self) -> None:
        conn = _Connection(self, self._token or self._password or "")
        self._conn = conn
        self._live.add(conn.ended)
        conn.ended.add_done_callback(self._live.discard)
        # spec 9 step 3: CONNECT, SUBSCRIBE and hello within the connect timeout (30 s).
        self._attempt_timer = self.loop.call_later(
            self.options.connect_timeout, self._drop, conn, "timeout"
        )
        conn.thread.start()

    # --- events from the network thread, on the loop -------------------------------------------

    def _connack(self, conn: _Connection, code: int) -> None:
        if conn is not self._conn:
            return
        if code == 0:
            conn.subscribe()
            return
        if code in AUTH_REFUSED:
            # spec 9 step 6: which credential was refused decides the reason.
            using_token = self._token is not None
            self.halt(
                StopCause("auth_failed", "session_invalid" if using_token else "bad_credentials")
            )
            return
        self._drop(conn, f"connack_0x{code:x}")

    def _suback(self, conn: _Connection, codes: list[int]) -> None:
        if conn is not self._conn:
            return
        if not codes or any(c >= 0x80 for c in codes):
            self._drop(conn, "subscribe_failed")
            return
        conn.hello_rid = self.options.next_rid()
        conn.hello_sent_at = _now_ms()
        hello = {
            "v": 1,
            "type": "hello",
            "rid": conn.hello_rid,
            "max_receive_bytes": self.options.max_receive_bytes,
            "client": self.options.client_name,
        }
        conn.publish(dumps(hello))

    def _payload(self, conn: _Connection, payload: bytes) -> None:
        if conn is not self._conn:
            return
        try:
            frame = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return
        kind = frame["type"]
        if kind == "fatal":
            # spec 6.8: disabled, deleted, password_reset, protocol -> stop reconnecting.
            reason = frame.get("reason")
            self.halt(StopCause("kicked", str(reason) if reason is not None else "fatal"))
        elif kind == "resp" and conn.hello_rid != "" and frame.get("rid") == conn.hello_rid:
            conn.hello_rid = ""
            self._handshaken(conn, frame)
        elif self._online:
            self._events.link_frame(frame)

    def _disconnect_packet(self, conn: _Connection, code: int) -> None:
        if conn is not self._conn:
            return
        if code == SESSION_TAKEN_OVER:
            self.halt(StopCause("kicked", "taken_over"))
            return
        conn.drop_reason = f"disconnect_0x{code:x}"

    def _closed(
        self, conn: _Connection, reason: str | None, error: BaseException | None = None
    ) -> None:
        if not conn.ended.done():
            conn.ended.set_result(None)
        self._drop(conn, reason or conn.drop_reason, error or conn.drop_error)

    def _handshaken(self, conn: _Connection, frame: dict[str, Any]) -> None:
        if frame.get("ok") is not True:
            err = frame.get("error")
            code = err.get("code") if isinstance(err, dict) else None
            self._drop(conn, code if isinstance(code, str) else "hello_failed")
            return
        if self._attempt_timer is not None:
            self._attempt_timer.cancel()
            self._attempt_timer = None
        data = frame.get("data")
        hello = data if isinstance(data, dict) else {}
        now = _now_ms()
        server_time = hello.get("server_time_ms")
        # spec 9 "时间": offset = server_time_ms - (hello sent + response received) / 2.
        offset = (
            float(server_time) - (conn.hello_sent_at + now) / 2
            if isinstance(server_time, (int, float))
            else 0.0
        )
        token = hello.get("session_token")
        token = token if isinstance(token, str) else None
        if token is not None:
            self.set_session_token(token)
        self._online = True
        self._online_since = time.monotonic()
        self._events.link_online(hello, offset, token)
        if not self._stopped:
            self._events.link_state("online", "", None)

    def _drop(self, conn: _Connection, reason: str, error: BaseException | None = None) -> None:
        if conn is not self._conn:
            return
        self._conn = None
        if self._attempt_timer is not None:
            self._attempt_timer.cancel()
            self._attempt_timer = None
        conn.end()
        was_online = self._online
        self._online = False
        if was_online:
            # Requests not answered yet are re-sent by the owner on the next connection.
            self._events.link_down()
        if self._stopped:
            return
        if self._close_means is not None:
            self.halt(self._close_means)
            return
        if was_online and time.monotonic() - self._online_since >= STABLE:
            self._backoff.reset()
        delay = self._backoff.next()
        self._events.link_state("reconnecting", reason, delay, error)

        def retry() -> None:
            self._retry_timer = None
            if not self._stopped:
                self._open()

        self._retry_timer = self.loop.call_later(delay, retry)
