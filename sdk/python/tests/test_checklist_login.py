"""Checklist items 1, 13 and 15 (sdk/conformance/checklist.md): login, password change, tokens."""

from __future__ import annotations

import re

import pytest

import nixmsg
from helpers import NO_RECONNECT_WINDOW, WAIT, Clients, Harness, Proxy

TCP = nixmsg.ConnectOptions(transport="tcp")


def test_checklist_01_login_and_handshake_parameters(harness: Harness, clients: Clients) -> None:
    ep = harness.endpoint()
    a = clients.online(harness.ws_url, ep)
    info = a.client.server_info
    assert info is not None
    assert info.max_body_bytes == 262144
    assert info.max_meta_bytes == 4096
    assert info.max_frame_bytes == 786432
    assert info.ack_timeout_seconds == 2, "the harness config"
    assert info.max_ttl_seconds > 0 and info.max_schedule_seconds > 0
    assert re.match(r"^\d+\.\d+\.\d+", info.server_version)
    assert abs(a.client.clock_offset_ms) < 1000, a.client.clock_offset_ms
    assert [s.state for s in a.states.snapshot()] == ["connecting", "online"]
    sessions = a.sessions.snapshot()
    assert len(sessions) == 1
    assert sessions[0].startswith("nst_")
    assert a.client.session_token == sessions[0]
    assert a.client.get_self().id == ep.id

    # Raw TCP only when asked for; the same handshake.
    tcp = clients.online(harness.ws_url, ep, TCP)
    tcp_info = tcp.client.server_info
    assert tcp_info is not None and tcp_info.max_frame_bytes == 786432
    assert tcp.client.get_self().id == ep.id


def test_checklist_13_password_change_old_fails_no_reconnect(
    harness: Harness, clients: Clients, proxy: Proxy
) -> None:
    ep = harness.endpoint()
    a = clients.online(harness.ws_url, ep)
    with pytest.raises(nixmsg.NixMsgError) as wrong:
        a.client.change_login_password("not-the-password", "new-password-1")
    assert wrong.value.code == "unauthorized"
    assert isinstance(wrong.value, nixmsg.ServerError)
    a.client.change_login_password(ep.password, "new-password-1")
    a.sessions.wait_count(2, lambda _: True, "the second token")
    tokens = a.sessions.snapshot()
    assert tokens[1] != tokens[0], "the change issues a new token"
    assert a.client.session_token == tokens[1]
    a.client.close()

    b = clients.track(harness.ws_url, ep.id, password="new-password-1")
    b.client.ready(timeout=WAIT)
    assert b.client.get_self().id == ep.id
    b.client.close()

    old = clients.track(f"ws://{proxy.address}/mqtt", ep.id, password=ep.password)
    queued = old.client.send_nowait(ep.id, "queued before the refusal")
    ev = old.states.wait_for(lambda s: s.state == "auth_failed", "auth_failed")
    assert ev.reason == "bad_credentials"
    assert ev.error is not None and ev.error.code == "auth_failed"
    with pytest.raises(nixmsg.NixMsgError) as failed:
        queued.result(WAIT)
    assert failed.value.code == "auth_failed"
    with pytest.raises(nixmsg.StoppedError) as not_ready:
        old.client.ready(timeout=WAIT)
    assert not_ready.value.code == "auth_failed"
    assert proxy.accepted.count() == 1
    proxy.accepted.expect_none(lambda _: True, "a reconnect after auth_failed", NO_RECONNECT_WINDOW)
    assert old.client.state == "auth_failed"


def test_checklist_15_session_tokens(harness: Harness, clients: Clients, proxy: Proxy) -> None:
    ep = harness.endpoint()
    # Password login through a proxy we can cut: the SDK's own reconnect uses the token.
    a = clients.online(f"ws://{proxy.address}/mqtt", ep)
    token = a.sessions.wait_for(lambda _: True, "the token")
    assert token.startswith("nst_")
    proxy.cut()
    a.states.wait_for(lambda s: s.state == "reconnecting", "reconnecting")
    a.states.wait_count(2, lambda s: s.state == "online", "online again")
    assert len(a.sessions.snapshot()) == 1, "a token reconnect issues no new token"
    assert a.client.session_token == token
    a.client.close()

    # An application restart: connect with the saved token.
    b = clients.track(harness.ws_url, ep.id, session_token=token)
    b.client.ready(timeout=WAIT)
    assert b.sessions.snapshot() == []

    # A password login elsewhere takes over (0x8E) and replaces the token.
    c = clients.online(harness.ws_url, ep)
    kicked = b.states.wait_for(lambda s: s.state == "kicked", "kicked")
    assert kicked.reason == "taken_over"
    new_token = c.sessions.wait_for(lambda _: True, "C's token")
    assert new_token != token

    stale = clients.track(f"ws://{proxy.address}/mqtt", ep.id, session_token=token)
    refused = stale.states.wait_for(lambda s: s.state == "auth_failed", "auth_failed")
    assert refused.reason == "session_invalid"
    attempts = proxy.accepted.count()
    proxy.accepted.expect_none(lambda _: True, "a reconnect after session_invalid", NO_RECONNECT_WINDOW)
    assert proxy.accepted.count() == attempts

    # logout invalidates the token and stops the client.
    c.client.logout()
    off = c.states.wait_for(lambda s: s.state == "offline", "offline")
    assert off.reason == "logout"
    with pytest.raises(nixmsg.NixMsgError) as closed:
        c.client.get_self()
    assert closed.value.code == "closed"
    after = clients.track(harness.ws_url, ep.id, session_token=new_token)
    gone = after.states.wait_for(lambda s: s.state == "auth_failed", "auth_failed")
    assert gone.reason == "session_invalid"
