"""Builds the ``send`` frame of spec 6.2 from the SDK's options, with the local checks of spec 9."""

from __future__ import annotations

import datetime
from typing import Any

from .body import Limits, check_meta, encode_body, encode_frame
from .send_queue import frame_for
from .types import Recipient, SendOptions, Target
from .uuid import uuidv7

#: A rid as long as any the client makes, for the size check before queueing.
_RID_PLACEHOLDER = "r" * 12


def _local_ms(at: datetime.datetime | int | float) -> float:
    if isinstance(at, datetime.datetime):
        return at.timestamp() * 1000
    return float(at)


def build_send_frame(
    to: Recipient,
    body: str | bytes,
    options: SendOptions,
    limits: Limits,
    offset_ms: float,
) -> dict[str, Any]:
    """The frame content of one send, fixed at call time: the id, and ``send_at_ms`` converted
    from the local ``send_at`` with the server clock offset once, so that a resend has the same
    fingerprint (spec 7.3, 9). Raises ``bad_request``, ``body_too_large``, ``meta_too_large`` or
    ``frame_too_large``.

    Example::

        frame = build_send_frame("door-1", "open", SendOptions(delay=5000), DEFAULT_LIMITS, 0)
    """
    target = to if isinstance(to, Target) else Target("endpoint", to)
    frame: dict[str, Any] = {
        "id": options.id or uuidv7(),
        "to": {"kind": target.kind, "id": target.id},
        "body": encode_body(body, options.content_type, limits.max_body_bytes),
    }
    if options.meta is not None:
        check_meta(options.meta, limits.max_meta_bytes)
        frame["meta"] = options.meta
    if options.send_at is not None:
        frame["send_at_ms"] = max(0, round(_local_ms(options.send_at) + offset_ms))
    if options.delay is not None:
        frame["delay_ms"] = max(0, round(options.delay))
    if options.keep is not None or options.ttl is not None:
        # A ttl alone means "keep for that long".
        keep = True if options.keep is None else options.keep
        frame["offline"] = (
            {"keep": keep, "ttl_seconds": options.ttl}
            if keep and options.ttl is not None
            else {"keep": keep}
        )
    if options.receipt is not None:
        frame["receipt"] = options.receipt
    if options.talk_password:
        frame["talk_password"] = options.talk_password
    encode_frame(frame_for(_RID_PLACEHOLDER, frame), limits.max_frame_bytes)
    return frame
