"""The built wheel in a fresh venv runs the README examples against a real server, exchanging
messages with a TypeScript SDK client (issue 12's "done when")."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO_ROOT, Endpoint, Harness, deno_path

SDK_ROOT = Path(__file__).resolve().parents[1]


class TsPeer:
    """``tests/ts_peer.ts``: a TypeScript SDK client that echoes every message."""

    def __init__(self, url: str, ep: Endpoint) -> None:
        # permissions: not the shipped command: a TypeScript SDK client, not the server.
        args = [
            deno_path(), "run", "--quiet", "--allow-all", "--frozen",
            "--config", str(REPO_ROOT / "deno.json"),
            str(Path(__file__).with_name("ts_peer.ts")), url, ep.id, ep.password,
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )
        self.lines: queue.Queue[dict[str, object]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.lines.get(timeout=60)
        assert first == {"ready": True}

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.put(json.loads(line))

    def stop(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel from dist/ (built here when dist/ has none) installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheels = sorted((SDK_ROOT / "dist").glob("nixmsg-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "dist"), str(SDK_ROOT)],
            check=True,
            capture_output=True,
        )
        wheels = sorted((tmp / "dist").glob("nixmsg-*.whl"))
    assert wheels, "no wheel was built"
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheels[-1])],
        check=True,
    )
    out = subprocess.run(
        [str(python), "-c", "import nixmsg, sys; print(nixmsg.__file__)"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp,
    ).stdout
    assert str(venv) in out, f"nixmsg imported from {out}, not from the fresh venv"
    return python


def readme_examples() -> dict[str, str]:
    """The README's Python blocks that start with ``# <file name>:``."""
    text = (SDK_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    named = {}
    for b in blocks:
        m = re.match(r"# (\S+\.py):", b)
        if m:
            named[m.group(1)] = b
    return named


@pytest.fixture()
def peer(harness: Harness) -> Iterator[tuple[TsPeer, Endpoint]]:
    ep = harness.endpoint()
    p = TsPeer(harness.ws_url, ep)
    try:
        yield p, ep
    finally:
        p.stop()


@pytest.mark.parametrize(
    ("script", "text"),
    [("hello.py", "hello from Python"), ("hello_async.py", "hello from asyncio")],
)
def test_readme_example_from_the_wheel_talks_to_a_typescript_client(
    harness: Harness,
    installed: Path,
    peer: tuple[TsPeer, Endpoint],
    tmp_path: Path,
    script: str,
    text: str,
) -> None:
    ts, ts_ep = peer
    me = harness.endpoint()
    source = readme_examples()[script]
    (tmp_path / script).write_text(source, encoding="utf-8")
    env = {
        **os.environ,
        "NIXMSG_URL": harness.ws_url,
        "NIXMSG_ID": me.id,
        "NIXMSG_PASSWORD": me.password,
        "NIXMSG_PEER": ts_ep.id,
    }
    env.pop("PYTHONPATH", None)
    run = subprocess.run(
        [str(installed), script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90
    )
    assert run.returncode == 0, run.stderr
    # The TypeScript client got the Python message, and Python printed its answer.
    got = ts.lines.get(timeout=15)
    assert got == {"from": me.id, "body": text}
    assert f"{ts_ep.id}: echo: {text}" in run.stdout.splitlines(), run.stdout
    assert re.search(r"^sent [0-9a-f-]{36} dispatched$", run.stdout, re.M), run.stdout
