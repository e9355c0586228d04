"""The SDK's exceptions: every one carries a ``code`` (spec 6.10, or one of the SDK's own codes)."""

from __future__ import annotations

from typing import Any

from .codes import SDK_CODES

#: Codes produced by the SDK itself (see :class:`NixMsgError` and :mod:`nixmsg.codes`).
LOCAL_CODES = SDK_CODES


class NixMsgError(Exception):
    """The base exception of the SDK. Branch on ``code`` (the message is for developers).

    ``code`` is a spec 6.10 server code (``talk_password_required``, ``body_too_large`` …), or one
    of the SDK's own: ``not_connected`` (the call needs a completed handshake, or the connection
    was lost before the response), ``queue_full``, ``timeout``, ``closed`` (closed or logged out),
    ``kicked`` (taken over, or a ``fatal`` from the server; ``reason`` says which),
    ``auth_failed`` (``reason`` is ``session_invalid`` or ``bad_credentials``), ``network`` and
    ``bad_response``. :mod:`nixmsg.codes` has a constant for each. The underlying error, when
    there is one (a refused connection, a TLS failure, an invalid URL), is ``__cause__``.

    Example::

        try:
            client.send("door-1", "open")
        except nixmsg.NixMsgError as err:
            if err.code == "talk_password_required":
                client.unlock("door-1", input("Talk password: "))
    """

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        data: dict[str, Any] | None = None,
        status: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message or code)
        self.code = code
        #: ``error.data`` of the server response, when it had one.
        self.data = data
        #: HTTP status, for errors of the registration API.
        self.status = status
        #: Why the client stopped, for ``kicked``, ``auth_failed`` and ``closed``.
        self.reason = reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={str(self)!r})"


class ServerError(NixMsgError):
    """The server answered a request with an error (``resp`` or the HTTP registration API)."""


class LimitError(NixMsgError):
    """A local check refused the call before anything was sent: ``body_too_large``,
    ``meta_too_large``, ``frame_too_large``, ``queue_full`` or a local ``bad_request``."""


class ConfigError(NixMsgError, ValueError):
    """``bad_request`` from the SDK's own checks of options and arguments (an invalid URL, an
    empty endpoint id, a negative delay, a missing callback), raised before anything is sent."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message)


class NotConnectedError(NixMsgError):
    """``not_connected``: no completed handshake, or the connection dropped before the answer."""


class RequestTimeoutError(NixMsgError, TimeoutError):
    """``timeout``: no answer within the request timeout."""


class StoppedError(NixMsgError):
    """The client stopped for good: ``closed``, ``kicked`` or ``auth_failed`` (see ``reason``)."""


class NetworkError(NixMsgError):
    """``network`` or ``bad_response``: an HTTP request failed or got a non-NixMsg answer."""


_LOCAL_TYPES: dict[str, type[NixMsgError]] = {
    "not_connected": NotConnectedError,
    "timeout": RequestTimeoutError,
    "closed": StoppedError,
    "kicked": StoppedError,
    "auth_failed": StoppedError,
    "network": NetworkError,
    "bad_response": NetworkError,
    "queue_full": LimitError,
}


def local_error(code: str, message: str | None = None, *, reason: str | None = None) -> NixMsgError:
    """An error the SDK produces itself, as the subclass that fits ``code``."""
    cls = _LOCAL_TYPES.get(code, LimitError)
    return cls(code, message, reason=reason)
