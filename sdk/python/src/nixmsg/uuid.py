"""UUIDv7 message ids (RFC 9562, spec 6.2)."""

from __future__ import annotations

import os
import time


def uuidv7(now_ms: int | None = None) -> str:
    """A UUIDv7 in its 36-character form: 48 bits of Unix milliseconds, then random bits.

    Example::

        uuidv7()  # "019ac1f2-7b3c-7d41-9a0e-5f2b8c1d3e4f"
    """
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    b = bytearray(os.urandom(16))
    b[0:6] = ms.to_bytes(6, "big")
    b[6] = 0x70 | (b[6] & 0x0F)
    b[8] = 0x80 | (b[8] & 0x3F)
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
