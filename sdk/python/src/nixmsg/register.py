"""Self-registration over HTTP (spec 6.9)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from .body import dumps
from .errors import NetworkError, ServerError
from .types import RegisterResult
from .url import register_url


def register(
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
    """Registers a new endpoint with the registration code; no connection needed. ``url`` is the
    connection URL; the HTTP address is derived from it (spec 6.9). A generated login password is
    returned once and not kept by the SDK.

    Example::

        r = nixmsg.register("wss://relay.example/mqtt", "code-from-admin", name="Front door")
        print(r.id, r.login_password)
    """
    body = dumps(
        {
            "registration_code": registration_code,
            "id": id,
            "login_password": login_password,
            "name": name,
            "talk_password": talk_password,
        }
    ).encode("utf-8")
    req = urllib.request.Request(
        register_url(url),
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    context = ssl_context or (ssl.create_default_context(cafile=ca_file) if ca_file else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as res:
            status, raw = res.status, res.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    except (urllib.error.URLError, OSError) as err:
        raise NetworkError("network", f"Registration request failed: {err}") from err
    try:
        parsed: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise NetworkError(
            "bad_response", f"Registration answered HTTP {status} without JSON", status=status
        ) from err
    parsed = parsed if isinstance(parsed, dict) else {}
    data = parsed.get("data")
    if parsed.get("ok") is True and isinstance(data, dict) and isinstance(data.get("id"), str):
        pw = data.get("login_password")
        return RegisterResult(data["id"], pw if isinstance(pw, str) else None)
    e = parsed.get("error")
    e = e if isinstance(e, dict) else {}
    code = e.get("code") if isinstance(e.get("code"), str) else None
    code = str(code or "bad_response")
    message = str(e.get("message") or code)
    edata = e.get("data") if isinstance(e.get("data"), dict) else None
    cls = ServerError if code != "bad_response" else NetworkError
    raise cls(code, message, status=status, data=edata)
