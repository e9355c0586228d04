"""Shared fixtures: one harness (a fresh real server) per test module, clients closed per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import Clients, Harness, Proxy  # noqa: E402


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture()
def clients() -> Iterator[Clients]:
    c = Clients()
    try:
        yield c
    finally:
        c.close_all()


@pytest.fixture()
def proxy(harness: Harness) -> Iterator[Proxy]:
    p = Proxy(harness.address)
    try:
        yield p
    finally:
        p.close()
