"""Public types of the SDK (spec 6, 9): frozen dataclasses. Times are Unix milliseconds."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from .errors import ConfigError
from .url import Transport

if TYPE_CHECKING:
    from .errors import NixMsgError

#: Any JSON value.
JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]
#: A JSON object.
JsonObject = dict[str, Any]

#: States reported to ``on_connection`` (spec 9).
ConnectionState = Literal["connecting", "online", "reconnecting", "offline", "kicked", "auth_failed"]
#: Message state (spec 7.1).
MessageState = Literal["scheduled", "dispatched", "completed"]
#: Delivery state (spec 7.1).
DeliveryState = Literal["pending", "accepted", "recalled", "expired", "dropped", "rejected"]


@dataclass(frozen=True)
class Target:
    """Where a message goes (spec 6.2): ``Target("group", "g_…")`` or ``Target("endpoint", id)``."""

    kind: Literal["endpoint", "group"]
    id: str

    @staticmethod
    def group(group_id: str) -> Target:
        """A group recipient."""
        return Target("group", group_id)


#: A recipient: an endpoint id, or an explicit :class:`Target` (use this for groups).
Recipient = Union[str, Target]


@dataclass(frozen=True)
class Password:
    """Log in with the login password."""

    password: str


@dataclass(frozen=True)
class SessionToken:
    """Log in with a session token saved from ``on_session``."""

    token: str


#: How to log in.
Credential = Union[Password, SessionToken]


@dataclass(frozen=True)
class ConnectionEvent:
    """A connection state change.

    ``reason``: for ``kicked``, ``taken_over`` or the ``fatal`` reason (``disabled``, ``deleted``,
    ``password_reset``, ``protocol``); for ``auth_failed``, ``session_invalid`` or
    ``bad_credentials``; for ``offline``, ``closed`` or ``logout``; for ``reconnecting``, what
    ended the last attempt. ``retry_in``: for ``reconnecting``, the delay in seconds.
    """

    state: ConnectionState
    reason: str = ""
    retry_in: float | None = None
    error: NixMsgError | None = None


@dataclass(frozen=True)
class ServerInfo:
    """Limits and facts from the handshake response (spec 6.1)."""

    server_time_ms: int
    server_version: str
    max_body_bytes: int
    max_meta_bytes: int
    max_frame_bytes: int
    max_ttl_seconds: int
    max_schedule_seconds: int
    ack_timeout_seconds: int


@dataclass(frozen=True)
class ConnectOptions:
    """Options of ``connect``; the defaults are the spec's.

    - ``transport``: ``"websocket"`` (default) or ``"tcp"``; raw TCP only when asked for.
    - ``ack_mode``: ``"auto"`` acks after ``on_message`` returns; ``"manual"`` only on ``ack()``.
    - ``keepalive``: MQTT keep alive in seconds, 10–600.
    - ``connect_timeout``: CONNECT, SUBSCRIBE and ``hello`` together, in seconds.
    - ``max_receive_bytes``: declared in ``hello``, at least 1024.
    - ``queue_capacity``: sends held in memory, in flight included.
    - ``max_in_flight``: sends published without a response yet.
    - ``dedup_capacity``: received messages remembered for deduplication.
    - ``request_timeout``: how long a request other than ``send`` waits, in seconds.
    - ``ca_file`` / ``ssl_context``: TLS trust for ``wss``/``mqtts`` (a private CA); without
      them the system's CAs are used.
    - ``on_callback_error``: called with exceptions raised by application callbacks; default
      logs them with the ``nixmsg`` logger.
    """

    transport: Transport = "websocket"
    ack_mode: Literal["auto", "manual"] = "auto"
    keepalive: int = 30
    connect_timeout: float = 30.0
    max_receive_bytes: int = 786_432
    queue_capacity: int = 1000
    max_in_flight: int = 100
    dedup_capacity: int = 10_000
    request_timeout: float = 30.0
    ca_file: str | None = None
    ssl_context: ssl.SSLContext | None = None
    on_callback_error: Callable[[BaseException], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Invalid options fail when they are built, with the SDK's error type (bad_request).
        if self.transport not in ("websocket", "tcp"):
            raise ConfigError(f"Unknown transport: {self.transport}")
        if self.ack_mode not in ("auto", "manual"):
            raise ConfigError("ack_mode must be 'auto' or 'manual'")
        if not 10 <= self.keepalive <= 600:
            raise ConfigError("keepalive must be 10–600 seconds")
        if self.max_receive_bytes < 1024:
            raise ConfigError("max_receive_bytes must be at least 1024")
        for name in ("queue_capacity", "max_in_flight", "dedup_capacity"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1")
        for name in ("connect_timeout", "request_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive")
        if self.on_callback_error is not None and not callable(self.on_callback_error):
            raise ConfigError("on_callback_error must be callable")


@dataclass(frozen=True)
class SendOptions:
    """Options of ``send`` (spec 6.2, 9).

    - ``send_at``: when to send, local clock (a ``datetime`` or Unix ms); converted to server time
      once, at the call.
    - ``delay``: delay in ms; 0 sends at once. Without both the endpoint default applies.
    - ``keep`` / ``ttl``: keep for an offline recipient, for ``ttl`` seconds (a ttl alone keeps).
    - ``receipt``: ask for receipts (server default true).
    - ``talk_password``: the recipient's talk password, when needed (spec 6.6).
    - ``content_type``: defaults to text/plain for ``str``, application/octet-stream for bytes.
    - ``meta``: application metadata, at most ``max_meta_bytes`` serialized.
    - ``id``: the message id; default a new UUIDv7. Reusing an id makes the send idempotent.
    """

    send_at: datetime.datetime | int | float | None = None
    delay: int | None = None
    keep: bool | None = None
    ttl: int | None = None
    receipt: bool | None = None
    talk_password: str | None = None
    content_type: str | None = None
    meta: JsonObject | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        if self.delay is not None and self.delay < 0:
            raise ConfigError(f"delay must not be negative (got {self.delay})")
        if self.ttl is not None and self.ttl < 1:
            raise ConfigError(f"ttl must be at least 1 second (got {self.ttl})")
        if self.send_at is not None and not isinstance(self.send_at, (datetime.datetime, int, float)):
            raise ConfigError("send_at must be a datetime or Unix ms")
        if self.send_at is not None and self.delay is not None:
            raise ConfigError("Give send_at or delay, not both")


@dataclass(frozen=True)
class SendResult:
    """The server's answer to ``send`` (spec 6.2)."""

    id: str
    send_at_ms: int
    state: MessageState


@dataclass(frozen=True)
class RecallResult:
    """The answer to ``recall`` (spec 6.4)."""

    result: Literal["recalled", "partial", "failed"]
    recalled: int
    accepted: int
    other: int


@dataclass(frozen=True)
class DeliveryStatus:
    """One recipient's line in a :class:`StatusResult`."""

    endpoint_id: str
    state: DeliveryState
    reason: str


@dataclass(frozen=True)
class StatusResult:
    """The answer to ``status`` (spec 6.4): the message and one page of recipients."""

    id: str
    state: MessageState
    reason: str
    send_at_ms: int
    counts: dict[str, int]
    items: list[DeliveryStatus]
    next_cursor: str


@dataclass(frozen=True)
class Message:
    """A received message (spec 6.3). ``body`` is ``str`` for utf8, ``bytes`` for base64."""

    id: str
    sender: str
    to: Target
    body: str | bytes
    content_type: str
    meta: JsonObject
    send_at_ms: int

    @property
    def text(self) -> str:
        """The body as text, whatever its encoding."""
        return self.body if isinstance(self.body, str) else self.body.decode("utf-8", "replace")


@dataclass(frozen=True)
class Receipt:
    """What happened to a sent message at one recipient (spec 6.4)."""

    receipt_id: str
    id: str
    endpoint_id: str
    state: Literal["accepted", "expired", "dropped", "rejected"]
    reason: str
    at_ms: int


@dataclass(frozen=True)
class Revoked:
    """A message handed to the application was withdrawn before it was acked (spec 6.4), or its
    ``ack`` found the delivery already final (``reason`` is then that state, spec 9)."""

    id: str
    sender: str
    reason: str


@dataclass(frozen=True)
class PresenceEvent:
    """An online or offline notice (spec 6.5)."""

    id: str
    online: bool
    at_ms: int


@dataclass(frozen=True)
class GroupEvent:
    """A group change (spec 6.7): ``member_added``, ``member_removed``, ``left``,
    ``owner_changed``, ``renamed`` or ``dissolved``."""

    group_id: str
    event: str
    endpoint_id: str
    at_ms: int


@dataclass(frozen=True)
class RegisterResult:
    """The answer to ``register``; ``login_password`` only when the server generated it."""

    id: str
    login_password: str | None = None


@dataclass(frozen=True)
class SelfInfo:
    """The answer to ``get_self`` (spec 6.6)."""

    id: str
    name: str
    source: str
    default_delay_ms: int
    talk_password_set: bool
    created_at_ms: int


@dataclass(frozen=True)
class PresenceInfo:
    """One entry of ``presence`` (spec 6.5)."""

    id: str
    online: bool
    since_ms: int | None
    not_found: bool


@dataclass(frozen=True)
class DirectoryEntry:
    """One entry of ``directory`` (spec 6.5)."""

    id: str
    name: str
    online: bool
    online_since_ms: int | None
    offline_since_ms: int | None
    talk_password_set: bool


@dataclass(frozen=True)
class DirectoryPage:
    """A page of the directory; pass ``next_cursor`` back ("" after the last page)."""

    items: list[DirectoryEntry]
    next_cursor: str


@dataclass(frozen=True)
class GroupMemberInput:
    """A member to add to a group, with that member's talk password when it has one."""

    id: str
    talk_password: str = ""


@dataclass(frozen=True)
class GroupMemberFailure:
    """A member that could not be added, with the reason code (spec 6.7)."""

    id: str
    code: str


@dataclass(frozen=True)
class GroupChange:
    """The answer to ``groups.create`` and ``groups.add``."""

    group_id: str
    added: list[str]
    failed: list[GroupMemberFailure]


@dataclass(frozen=True)
class GroupSummary:
    """A group in ``groups.list``."""

    id: str
    name: str
    owner_id: str
    member_count: int


@dataclass(frozen=True)
class GroupSummaryPage:
    """A page of ``groups.list``."""

    items: list[GroupSummary]
    next_cursor: str


@dataclass(frozen=True)
class GroupMember:
    """A member in ``groups.get``."""

    id: str
    name: str
    online: bool


@dataclass(frozen=True)
class GroupDetails:
    """The answer to ``groups.get``: the group and one page of members."""

    id: str
    name: str
    owner_id: str
    member_count: int
    members: list[GroupMember]
    next_cursor: str
