"""Address derivation: the MQTT connection URL and the registration URL (spec 6.9, 9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from .errors import ConfigError

#: How the SDK reaches the server (spec 9: WebSocket unless TCP is asked for).
Transport = Literal["websocket", "tcp"]

_SECURE = {"wss": True, "https": True, "mqtts": True, "ws": False, "http": False, "mqtt": False}


@dataclass(frozen=True)
class Address:
    """Where one connection goes: host, port, TLS, transport and the WebSocket path."""

    host: str
    port: int
    tls: bool
    transport: Transport
    path: str

    @property
    def url(self) -> str:
        """The address as a URL (``ws://host:port/mqtt``, ``mqtts://host:port`` …)."""
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        if self.transport == "tcp":
            return f"{'mqtts' if self.tls else 'mqtt'}://{netloc}:{self.port}"
        return f"{'wss' if self.tls else 'ws'}://{netloc}:{self.port}{self.path}"


def _parse(url: str) -> tuple[str, str, int, bool, str, str]:
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError as err:
        raise ConfigError(f"Cannot parse server URL: {url}") from err
    scheme = u.scheme.lower()
    if scheme not in _SECURE:
        raise ConfigError(f"Unsupported server URL scheme: {scheme}:")
    if not u.hostname:
        raise ConfigError(f"Cannot parse server URL: {url}")
    secure = _SECURE[scheme]
    if port is None:
        port = 8883 if scheme == "mqtts" else 1883 if scheme == "mqtt" else 443 if secure else 80
    return scheme, u.hostname, port, secure, _base_path(u.path), u.query


def _base_path(path: str) -> str:
    """The path in front of ``/mqtt``, without a trailing slash ("" for the usual ``/mqtt``)."""
    path = path.rstrip("/")
    if path.endswith("/mqtt"):
        path = path[: -len("/mqtt")]
    return path


def connection_address(url: str, transport: Transport = "websocket") -> Address:
    """The address to connect to. ``ws``/``wss``/``http``/``https``/``mqtt``/``mqtts`` all name
    the same server; ``transport`` decides: WebSocket at ``<base>/mqtt`` (default), or raw TCP
    only when ``transport`` is ``"tcp"`` (spec 9 step 1).

    Example::

        connection_address("https://relay.example:7443").url  # "wss://relay.example:7443/mqtt"
        connection_address("wss://relay.example:7443/mqtt", "tcp").url  # "mqtts://relay.example:7443"
    """
    scheme, host, port, secure, base, query = _parse(url)
    if transport not in ("websocket", "tcp"):
        raise ConfigError(f"Unknown transport: {transport}")
    if transport == "tcp":
        return Address(host, port, secure, "tcp", "")
    base = "" if scheme.startswith("mqtt") else base
    path = f"{base}/mqtt" + (f"?{query}" if query else "")
    return Address(host, port, secure, "websocket", path)


def register_url(url: str) -> str:
    """The registration endpoint for a connection URL (spec 6.9).

    Example::

        register_url("wss://relay.example:7443/mqtt")  # "https://relay.example:7443/api/client/register"
        register_url("mqtt://10.0.0.5:7443")  # "http://10.0.0.5:7443/api/client/register"
    """
    scheme, host, port, secure, base, _ = _parse(url)
    netloc = f"[{host}]" if ":" in host else host
    if scheme.startswith("mqtt"):
        base = ""
    return f"{'https' if secure else 'http'}://{netloc}:{port}{base}/api/client/register"
