"""Test helpers: the conformance harness, a counting TCP proxy, and event recorders."""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import nixmsg

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[3]
#: How long a test waits for an expected event by default (checklist "Setup").
WAIT = 15.0
#: Longer than the first reconnect delay (1 s + 30 %): a reconnect would show by then.
NO_RECONNECT_WINDOW = 2.5


def deno_path() -> str:
    """The Deno binary: $DENO, ``deno`` on PATH, or the repository's .tools copy."""
    if os.environ.get("DENO"):
        return os.environ["DENO"]
    found = shutil.which("deno")
    if found:
        return found
    local = REPO_ROOT / ".tools/node_modules/.bin/deno"
    if local.exists():
        return str(local)
    raise RuntimeError("Deno not found: set DENO or put deno on PATH")


@dataclass(frozen=True)
class Endpoint:
    id: str
    password: str


class Harness:
    """A running ``sdk/conformance/harness.ts`` (a fresh real server) and its JSON-line protocol."""

    def __init__(self, endpoints: int = 0) -> None:
        # permissions: not the shipped command: the conformance harness spawns the server (with the shipped set)
        # and toxiproxy.
        args = [
            deno_path(), "run", "--quiet", "--allow-all", "--frozen",
            "--config", str(REPO_ROOT / "deno.json"),
            str(REPO_ROOT / "sdk/conformance/harness.ts"),
            "--endpoints", str(endpoints), "--prefix", f"p{os.getpid():x}x",
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self._line(90.0, "the harness to start")
        self.info: dict[str, Any] = json.loads(first)
        self._lock = threading.Lock()
        self._seq = 0

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _line(self, timeout: float, what: str) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"Timed out waiting for {what}") from None
        if line is None:
            raise RuntimeError(f"The harness exited ({self._proc.poll()}) while waiting for {what}")
        return line

    @property
    def ws_url(self) -> str:
        return str(self.info["ws_url"])

    @property
    def tcp_url(self) -> str:
        return str(self.info["tcp_url"])

    @property
    def address(self) -> str:
        """``127.0.0.1:port`` of the server."""
        return str(self.info["http_url"]).removeprefix("http://")

    def command(self, cmd: dict[str, Any]) -> Any:
        """Sends one command and returns its ``data``; raises on an error answer."""
        with self._lock:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(cmd) + "\n")
            self._proc.stdin.flush()
            reply = json.loads(self._line(30.0, f"the answer to {cmd['cmd']}"))
        if not reply.get("ok"):
            raise RuntimeError(f"Harness command {cmd['cmd']} failed: {reply.get('error')}")
        return reply.get("data")

    def endpoint(self, **fields: str) -> Endpoint:
        """Creates a new endpoint with a unique id (or the given one)."""
        self._seq += 1
        fields.setdefault("id", f"p{os.getpid():x}n{self._seq}")
        d = self.command({"cmd": "endpoint", **fields})
        return Endpoint(d["id"], d["password"])

    def registration(self, enabled: bool, code: str | None = None) -> None:
        cmd: dict[str, Any] = {"cmd": "registration", "enabled": enabled}
        if code is not None:
            cmd["code"] = code
        self.command(cmd)

    def stop(self) -> None:
        """Closes stdin, which stops the server and removes its directory."""
        if self._proc.poll() is not None:
            return
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)


class Events(Generic[T]):
    """Recorded events (thread safe); ``wait_for`` returns when one matches, ``expect_none``
    proves that none arrives within a window (the only way to observe an absence)."""

    def __init__(self) -> None:
        self.items: list[T] = []
        self._cond = threading.Condition()

    def push(self, item: T) -> None:
        with self._cond:
            self.items.append(item)
            self._cond.notify_all()

    def count(self, pred: Callable[[T], bool] = lambda _: True) -> int:
        with self._cond:
            return sum(1 for i in self.items if pred(i))

    def snapshot(self) -> list[T]:
        with self._cond:
            return list(self.items)

    def wait_for(self, pred: Callable[[T], bool], what: str, timeout: float = WAIT) -> T:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in self.items:
                    if pred(i):
                        return i
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"Timed out after {timeout} s waiting for {what}")
                self._cond.wait(left)

    def wait_count(self, n: int, pred: Callable[[T], bool], what: str, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(1 for i in self.items if pred(i)) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    got = sum(1 for i in self.items if pred(i))
                    raise AssertionError(f"Timed out waiting for {n} x {what}; got {got}")
                self._cond.wait(left)

    def wait_until(self, cond: Callable[[list[T]], bool], what: str, timeout: float = WAIT) -> None:
        """Waits until ``cond`` holds for everything recorded so far."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not cond(self.items):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"Timed out after {timeout} s waiting for {what}")
                self._cond.wait(left)

    def expect_none(self, pred: Callable[[T], bool], what: str, window: float) -> None:
        before = self.count(pred)
        deadline = time.monotonic() + window
        with self._cond:
            while True:
                if sum(1 for i in self.items if pred(i)) != before:
                    raise AssertionError(f"Unexpected {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)


class Proxy:
    """A TCP proxy in front of the server that a test can cut, stall or refuse, to simulate
    network failures with real sockets. It forwards WebSocket and raw MQTT alike and records
    every accepted connection."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self.accepted: Events[float] = Events()
        self.refuse = False
        self._hold_down = False
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.getsockname()[1]}"

    @property
    def hold_down(self) -> bool:
        return self._hold_down

    @hold_down.setter
    def hold_down(self, value: bool) -> None:
        """Server-to-client bytes are held back while True: responses get "lost"."""
        self._hold_down = value

    def cut(self) -> None:
        """Destroys every open connection; held bytes are dropped."""
        with self._lock:
            pairs = list(self._pairs)
            self._pairs.clear()
        for p in pairs:
            p.close()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._server.close()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.accepted.push(time.time())
            if self.refuse:
                _hard_close(client)
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                _hard_close(client)
                continue
            upstream.settimeout(None)
            pair = _Pair(self, client, upstream)
            with self._lock:
                self._pairs.add(pair)
            pair.start()

    def _forget(self, pair: _Pair) -> None:
        with self._lock:
            self._pairs.discard(pair)


def _hard_close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


class _Pair:
    def __init__(self, proxy: Proxy, client: socket.socket, upstream: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self._closed = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._pump, args=(self.client, self.upstream, False), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.upstream, self.client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, down: bool) -> None:
        try:
            while not self._closed.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if down and self.proxy.hold_down:
                    continue  # held back, then dropped by the cut
                dst.sendall(data)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self.proxy._forget(self)
        _hard_close(self.client)
        _hard_close(self.upstream)


@dataclass
class Tracked:
    """A sync client and everything its callbacks saw."""

    client: nixmsg.NixMsgClient
    messages: Events[nixmsg.Message]
    receipts: Events[nixmsg.Receipt]
    revoked: Events[nixmsg.Revoked]
    states: Events[nixmsg.ConnectionEvent]
    sessions: Events[str]


class Clients:
    """Creates tracked clients and closes them all at the end of a test."""

    def __init__(self) -> None:
        self._open: list[nixmsg.NixMsgClient] = []

    def track(
        self,
        url: str,
        endpoint_id: str,
        *,
        password: str | None = None,
        session_token: str | None = None,
        options: nixmsg.ConnectOptions | None = None,
    ) -> Tracked:
        client = nixmsg.NixMsgClient.connect(
            url, endpoint_id, password=password, session_token=session_token, options=options
        )
        self._open.append(client)
        t = Tracked(client, Events(), Events(), Events(), Events(), Events())
        client.on_message(t.messages.push)
        client.on_receipt(t.receipts.push)
        client.on_revoked(t.revoked.push)
        client.on_connection(t.states.push)
        client.on_session(t.sessions.push)
        return t

    def online(self, url: str, ep: Endpoint, options: nixmsg.ConnectOptions | None = None) -> Tracked:
        t = self.track(url, ep.id, password=ep.password, options=options)
        t.client.ready(timeout=WAIT)
        return t

    def close_all(self) -> None:
        for c in self._open:
            c.close()
        self._open.clear()


def by_id(message_id: str) -> Callable[[nixmsg.Message], bool]:
    return lambda m: m.id == message_id


def iter_lines(text: str) -> Iterator[str]:
    yield from text.splitlines()
