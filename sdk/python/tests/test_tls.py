"""TLS with a caller-supplied CA file or SSL context, over WebSocket (wss) and TCP (mqtts),
through a TLS-terminating proxy in front of the real server (as sdk/ts's transport test does)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import nixmsg
from helpers import Clients, Harness


class TlsProxy:
    """Accepts TLS on 127.0.0.1 and forwards the plaintext to the server, on its own loop."""

    def __init__(self, target: str, cert: Path, key: Path) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ctx.load_cert_chain(cert, key)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self._ctx)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, ssl.SSLError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", "/CN=nixmsg-sdk-test",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
        ],  # fmt: skip
        check=True,
        capture_output=True,
    )
    return d / "cert.pem", d / "key.pem"


@pytest.fixture()
def tls_proxy(harness: Harness, cert: tuple[Path, Path]) -> Iterator[TlsProxy]:
    p = TlsProxy(harness.address, *cert)
    try:
        yield p
    finally:
        p.close()


def test_wss_with_a_ca_file_and_mqtts_with_an_ssl_context(
    harness: Harness, clients: Clients, tls_proxy: TlsProxy, cert: tuple[Path, Path]
) -> None:
    ep = harness.endpoint()
    wss = clients.online(
        f"wss://127.0.0.1:{tls_proxy.port}/mqtt", ep, nixmsg.ConnectOptions(ca_file=str(cert[0]))
    )
    assert wss.client.get_self().id == ep.id
    ctx = ssl.create_default_context(cafile=str(cert[0]))
    tcp = clients.online(
        f"https://127.0.0.1:{tls_proxy.port}",
        ep,
        nixmsg.ConnectOptions(transport="tcp", ssl_context=ctx),
    )
    assert tcp.client.get_self().id == ep.id
    # Registration takes the same trust settings.
    with pytest.raises(nixmsg.ServerError) as closed:
        nixmsg.register(f"wss://127.0.0.1:{tls_proxy.port}/mqtt", "x", ca_file=str(cert[0]))
    assert closed.value.code in ("registration_closed", "registration_code_invalid")


def test_an_untrusted_certificate_is_refused_and_retried(
    harness: Harness, clients: Clients, tls_proxy: TlsProxy
) -> None:
    ep = harness.endpoint()
    t = clients.track(f"wss://127.0.0.1:{tls_proxy.port}/mqtt", ep.id, password=ep.password)
    ev = t.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
    assert ev.reason == "tls_error"
    assert ev.error is not None and ev.error.code == nixmsg.codes.NETWORK
    assert isinstance(ev.error.__cause__, ssl.SSLCertVerificationError), repr(ev.error.__cause__)
    with pytest.raises(nixmsg.RequestTimeoutError) as late:
        t.client.ready(timeout=0.5)
    assert late.value.__cause__ is not None and isinstance(late.value.__cause__.__cause__, ssl.SSLError)
    assert t.states.count(lambda s: s.state == "online") == 0
