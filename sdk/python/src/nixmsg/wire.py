"""Wire shapes of spec 6 the SDK reads, and their mapping to the public types."""

from __future__ import annotations

from typing import Any, Literal

from .body import decode_body
from .errors import ServerError
from .types import GroupEvent, Message, PresenceEvent, Receipt, Revoked, ServerInfo, Target

#: A downlink frame as parsed JSON; fields are checked where they are used.
Frame = dict[str, Any]


def s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def n(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def n_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def to_server_info(h: Frame) -> ServerInfo:
    """The ``hello`` data (spec 6.1) as :class:`ServerInfo`."""
    return ServerInfo(
        server_time_ms=n(h.get("server_time_ms")),
        server_version=s(h.get("server_version")),
        max_body_bytes=n(h.get("max_body_bytes")),
        max_meta_bytes=n(h.get("max_meta_bytes")),
        max_frame_bytes=n(h.get("max_frame_bytes")),
        max_ttl_seconds=n(h.get("max_ttl_seconds")),
        max_schedule_seconds=n(h.get("max_schedule_seconds")),
        ack_timeout_seconds=n(h.get("ack_timeout_seconds")),
    )


def to_message(f: Frame) -> Message | None:
    """A ``msg`` frame (spec 6.3); None when it lacks ``id`` or ``from`` or its body is bad."""
    if not isinstance(f.get("id"), str) or not isinstance(f.get("from"), str):
        return None
    body = f.get("body")
    body = body if isinstance(body, dict) else {"enc": "utf8", "data": ""}
    to = f.get("to")
    to = to if isinstance(to, dict) else {}
    try:
        decoded = decode_body(body)
    except ValueError:
        return None
    meta = f.get("meta")
    kind: Literal["endpoint", "group"] = "group" if to.get("kind") == "group" else "endpoint"
    return Message(
        id=f["id"],
        sender=f["from"],
        to=Target(kind, s(to.get("id"))),
        body=decoded,
        content_type=s(body.get("content_type")),
        meta=meta if isinstance(meta, dict) else {},
        send_at_ms=n(f.get("send_at_ms")),
    )


def to_receipt(f: Frame) -> Receipt:
    """A ``receipt`` frame (spec 6.4)."""
    return Receipt(
        receipt_id=str(f.get("receipt_id")),
        id=s(f.get("id")),
        endpoint_id=s(f.get("endpoint_id")),
        state=s(f.get("state")),  # type: ignore[arg-type]
        reason=s(f.get("reason")),
        at_ms=n(f.get("at_ms")),
    )


def to_revoked(f: Frame) -> Revoked:
    """A ``revoked`` frame (spec 6.4)."""
    return Revoked(id=s(f.get("id")), sender=s(f.get("from")), reason=s(f.get("reason")))


def to_presence(f: Frame) -> PresenceEvent:
    """A ``presence`` frame (spec 6.5)."""
    return PresenceEvent(id=s(f.get("id")), online=f.get("online") is True, at_ms=n(f.get("at_ms")))


def to_group_event(f: Frame) -> GroupEvent:
    """A ``group_event`` frame (spec 6.7)."""
    return GroupEvent(
        group_id=s(f.get("group_id")),
        event=s(f.get("event")),
        endpoint_id=s(f.get("endpoint_id")),
        at_ms=n(f.get("at_ms")),
    )


def resp_error(f: Frame) -> ServerError:
    """The error of a failed ``resp`` (spec 6)."""
    e = f.get("error")
    e = e if isinstance(e, dict) else {}
    code = s(e.get("code")) or "bad_response"
    msg = s(e.get("message")) or code
    data = e.get("data") if isinstance(e.get("data"), dict) else None
    return ServerError(code, msg, data=data)
