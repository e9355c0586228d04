"""Message bodies on the wire and the local size checks of spec 9 ("本地检查")."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from .errors import LimitError


@dataclass(frozen=True)
class Limits:
    """The limits a send is checked against: from the last ``hello``, or the spec defaults."""

    max_body_bytes: int = 262_144
    max_meta_bytes: int = 4096
    max_frame_bytes: int = 786_432


#: Limits used before the first handshake: the spec defaults (spec 6.1, 11.1).
DEFAULT_LIMITS = Limits()


def dumps(value: Any) -> str:
    """Compact JSON without escaping non-ASCII or HTML characters (spec 6)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise LimitError("bad_request", f"Cannot serialize as JSON: {err}") from err


def utf8_length(text: str) -> int:
    """Number of bytes of ``text`` in UTF-8."""
    return len(text.encode("utf-8"))


def encode_body(body: str | bytes, content_type: str | None, max_body_bytes: int) -> dict[str, str]:
    """The wire body: ``str`` is sent as ``utf8``, bytes as ``base64``. Raises
    ``body_too_large`` when the decoded size exceeds ``max_body_bytes``, as the server would.

    Example::

        encode_body("hello", None, 262144)  # {"enc": "utf8", "data": "hello"}
    """
    if isinstance(body, str):
        try:
            size = utf8_length(body)
        except UnicodeEncodeError as err:
            raise LimitError("bad_request", "Body text contains an unpaired surrogate") from err
        check_body_size(size, max_body_bytes)
        wire = {"enc": "utf8", "data": body}
    elif isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
        check_body_size(len(raw), max_body_bytes)
        wire = {"enc": "base64", "data": base64.b64encode(raw).decode("ascii")}
    else:
        raise LimitError("bad_request", "Body must be str or bytes")
    if content_type:
        wire["content_type"] = content_type
    return wire


def decode_body(body: dict[str, Any]) -> str | bytes:
    """Decodes a received body: text for ``utf8``, bytes for ``base64``."""
    data = body.get("data", "")
    if not isinstance(data, str):
        raise ValueError("body.data is not a string")
    if body.get("enc") == "base64":
        try:
            return base64.b64decode(data, validate=True)
        except binascii.Error as err:
            raise ValueError("bad base64 body") from err
    return data


def check_body_size(size: int, max_body_bytes: int) -> None:
    """Raises ``body_too_large`` when ``size`` decoded bytes exceed ``max_body_bytes``."""
    if size > max_body_bytes:
        raise LimitError(
            "body_too_large", f"Body is {size} bytes, more than max_body_bytes {max_body_bytes}"
        )


def encode_frame(frame: dict[str, Any], max_frame_bytes: int) -> str:
    """Serializes a frame; raises ``frame_too_large`` when it exceeds ``max_frame_bytes``: the
    server closes the connection on an oversized packet without a ``resp``, so resending it after
    the reconnect would loop forever (spec 6.10, 9)."""
    text = dumps(frame)
    size = utf8_length(text)
    if size > max_frame_bytes:
        raise LimitError(
            "frame_too_large", f"Frame is {size} bytes, more than max_frame_bytes {max_frame_bytes}"
        )
    return text


def check_meta(meta: Any, max_meta_bytes: int) -> None:
    """Raises ``meta_too_large`` when ``meta`` serializes to more than ``max_meta_bytes``."""
    if not isinstance(meta, dict):
        raise LimitError("bad_request", "meta must be a JSON object")
    size = utf8_length(dumps(meta))
    if size > max_meta_bytes:
        raise LimitError(
            "meta_too_large", f"meta is {size} bytes, more than max_meta_bytes {max_meta_bytes}"
        )
