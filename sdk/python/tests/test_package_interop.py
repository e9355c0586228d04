"""The README's install commands build a wheel from this repository into a scratch project's fresh
venv (issue 27 item 5), and the README examples run from there against a real server, exchanging
messages with a TypeScript SDK client (issue 12's "done when")."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import zipfile
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


def readme_install_block() -> str:
    """The README's shell block under "## Install": the commands a user runs."""
    text = (SDK_ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Install") :]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's install commands, run as written in a scratch project outside the SDK folder
    (issue 27 item 5): a wheel built from sdk/python, installed with pip into a fresh venv."""
    project = tmp_path_factory.mktemp("project")
    assert SDK_ROOT not in project.parents
    env = {**os.environ, "NIXMSG_REPO": str(REPO_ROOT), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", readme_install_block()],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    python = project / ".venv" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-c", "import nixmsg, sys; print(nixmsg.__file__)"],
        check=True,
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
    ).stdout
    assert str(project / ".venv") in out, f"nixmsg imported from {out}, not from the fresh venv"
    return python


def test_the_wheel_carries_pep_639_license_metadata() -> None:
    wheels = sorted((SDK_ROOT / "dist").glob("nixmsg-*.whl"))
    if not wheels:
        pytest.skip("run_tests.sh builds dist/ first")
    with zipfile.ZipFile(wheels[-1]) as z:
        meta = z.read("nixmsg-0.1.0.dist-info/METADATA").decode("utf-8")
        names = z.namelist()
    assert "License-Expression: LicenseRef-NixMsg-Proprietary" in meta.splitlines()
    assert "License-File: LICENSE" in meta.splitlines()
    assert not [line for line in meta.splitlines() if line.startswith("Classifier: License ::")]
    assert "nixmsg-0.1.0.dist-info/licenses/LICENSE" in names


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
    # An answer from an earlier run arrives first: the example must wait for its own.
    stale = harness.endpoint()
    stale_body = f"echo: {text} 00000000"
    subprocess.run(
        [str(installed), "-c", STALE_SENDER, harness.ws_url, stale.id, stale.password, me.id, stale_body],
        check=True,
        capture_output=True,
        timeout=60,
    )
    run = subprocess.run(
        [str(installed), script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90
    )
    assert run.returncode == 0, run.stderr
    # The TypeScript client got the Python message, and Python printed its answer.
    got = ts.lines.get(timeout=15)
    assert got["from"] == me.id
    body = str(got["body"])
    assert re.fullmatch(re.escape(text) + r" [0-9a-f]{8}", body), body
    assert f"{ts_ep.id}: echo: {body}" in run.stdout.splitlines(), run.stdout
    assert stale_body not in run.stdout
    assert re.search(r"^sent [0-9a-f-]{36} dispatched$", run.stdout, re.M), run.stdout


#: Leaves a kept message for the example's endpoint before it runs (argv: url id password to body).
STALE_SENDER = """
import sys, nixmsg
url, me, pw, to, body = sys.argv[1:]
with nixmsg.NixMsgClient.connect(url, me, password=pw) as c:
    c.ready(timeout=30)
    c.send(to, body, keep=True, ttl=600)
"""


def test_readme_example_with_a_wrong_password_prints_auth_failed_and_exits_1(
    harness: Harness, installed: Path, tmp_path: Path
) -> None:
    me = harness.endpoint()
    (tmp_path / "hello.py").write_text(readme_examples()["hello.py"], encoding="utf-8")
    env = {
        **os.environ,
        "NIXMSG_URL": harness.ws_url,
        "NIXMSG_ID": me.id,
        "NIXMSG_PASSWORD": "not-the-password",
        "NIXMSG_PEER": me.id,
    }
    env.pop("PYTHONPATH", None)
    run = subprocess.run(
        [str(installed), "hello.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.startswith("failed: auth_failed:"), run.stderr
    assert "Traceback" not in run.stderr
