"""Verifying NixMsg webhook requests (docs/protocol.md "Webhooks").

Standard Webhooks signatures: ``v1,`` + base64 HMAC-SHA256 of ``<webhook-id>.<webhook-timestamp>.<body>``
keyed with the bytes of the ``whsec_`` secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping

#: How far a webhook's timestamp may be from now, in seconds, before it is refused (a replay).
WEBHOOK_TOLERANCE_SECONDS = 300


def sign_webhook(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value NixMsg sends for one request."""
    key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float | None = None,
    tolerance_seconds: int = WEBHOOK_TOLERANCE_SECONDS,
) -> bool:
    """True when a webhook request is signed with ``secret`` and recent enough.

    Pass the body exactly as received, and headers with lower-case names (or a case-insensitive
    mapping such as a framework's). Deduplicate accepted events by ``webhook-id``: a retry repeats
    it::

        if not verify_webhook(secret, request.headers, request.get_data()):
            abort(401)
    """
    webhook_id = headers.get("webhook-id", "")
    ts = headers.get("webhook-timestamp", "")
    if not webhook_id or not ts.isdigit():
        return False
    current = time.time() if now is None else now
    if abs(current - int(ts)) > tolerance_seconds:
        return False
    try:
        want = sign_webhook(secret, webhook_id, int(ts), body)
    except (binascii.Error, ValueError):
        return False
    return any(hmac.compare_digest(s, want) for s in headers.get("webhook-signature", "").split(" "))
