"""Checklist items 10, 12 and 14: takeover by a second login, registration, browsers."""

from __future__ import annotations

import os

import pytest

import nixmsg
from helpers import NO_RECONNECT_WINDOW, WAIT, Clients, Harness, Proxy


def test_checklist_10_second_login_kicks_first_no_reconnect(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ep = harness.endpoint()
    first = clients.online(f"ws://{proxy.address}/mqtt", ep)
    second = clients.online(harness.ws_url, ep, nixmsg.ConnectOptions(transport="tcp"))
    kicked = first.states.wait_for(lambda s: s.state == "kicked", "kicked")
    assert kicked.reason == "taken_over"
    assert kicked.error is not None and kicked.error.code == "kicked"
    with pytest.raises(nixmsg.StoppedError) as after:
        first.client.send(ep.id, "after the kick")
    assert after.value.code == "kicked"
    proxy.accepted.expect_none(lambda _: True, "a reconnect after the kick", NO_RECONNECT_WINDOW)
    assert proxy.accepted.count() == 1
    assert first.client.state == "kicked"
    assert second.client.state == "online"
    assert second.client.get_self().id == ep.id, "the second stays in"


def _register_fails(
    code: str, url: str, reg_code: str, *, id: str = "", login_password: str = ""  # noqa: A002
) -> nixmsg.NixMsgError:
    with pytest.raises(nixmsg.NixMsgError) as err:
        nixmsg.register(url, reg_code, id=id, login_password=login_password)
    assert err.value.code == code
    return err.value


def test_checklist_12_registration(harness: Harness, clients: Clients) -> None:
    url = harness.ws_url
    harness.registration(False)
    closed = _register_fails(
        "registration_closed", url, "whatever-code", id="reg-closed", login_password="password-1"
    )
    assert closed.status == 403
    harness.registration(True, "code-one-1111")
    _register_fails(
        "registration_code_invalid", url, "wrong-code-000", id="reg-wrong", login_password="password-1"
    )

    rid = f"reg-py-{os.getpid()}"
    r = nixmsg.register(url, "code-one-1111", id=rid, login_password="password-1", name="门口")
    assert r == nixmsg.RegisterResult(rid), "no password returned"
    a = clients.track(url, rid, password="password-1")
    a.client.ready(timeout=WAIT)
    me = a.client.get_self()
    assert me.name == "门口"
    assert me.source == "self"
    a.client.close()
    _register_fails("id_taken", url, "code-one-1111", id=rid, login_password="password-1")

    gen = nixmsg.register(url, "code-one-1111", name="generated")
    assert gen.id.startswith("e_")
    assert gen.login_password is not None and len(gen.login_password) == 20
    g = clients.track(url, gen.id, password=gen.login_password)
    g.client.ready(timeout=WAIT)
    g.client.close()

    harness.registration(True, "code-two-2222")
    _register_fails("registration_code_invalid", url, "code-one-1111", id="reg-old-code")
    again = clients.track(url, rid, password="password-1")
    again.client.ready(timeout=WAIT)
    assert again.client.get_self().id == rid, "registered endpoints still log in"
    nxt = nixmsg.register(harness.tcp_url, "code-two-2222")
    assert nxt.id.startswith("e_"), "the TCP URL maps to the same HTTP API"


@pytest.mark.skip(reason="checklist 14 is JavaScript only: a browser page on another origin")
def test_checklist_14_browser_on_another_origin() -> None:
    raise AssertionError("not applicable to the Python SDK")
