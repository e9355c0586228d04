package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Checklist items 1, 13 and 15 (spec 9 接入清单): login, password change, session tokens. */
class ChecklistLoginTest extends HarnessTest {
  /** Longer than the first reconnect delay (1 s + 30% jitter): a reconnect would show by then. */
  static final long NO_RECONNECT_WINDOW_MS = 2500;

  @Test
  void checklist01LoginAndHandshakeParameters() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ep);
    ServerInfo info = a.client.serverInfo();
    assertEquals(262144, info.maxBodyBytes());
    assertEquals(4096, info.maxMetaBytes());
    assertEquals(786432, info.maxFrameBytes());
    assertEquals(2, info.ackTimeoutSeconds(), "the harness config");
    assertTrue(info.maxTtlSeconds() > 0 && info.maxScheduleSeconds() > 0);
    assertTrue(info.serverVersion().matches("^\\d+\\.\\d+\\.\\d+.*"), info.serverVersion());
    assertTrue(Math.abs(a.client.clockOffsetMs()) < 1000, "offset " + a.client.clockOffsetMs());
    List<ConnectionState> states =
        a.states.items().stream().map(ConnectionEvent::state).collect(Collectors.toList());
    assertEquals(Arrays.asList(ConnectionState.CONNECTING, ConnectionState.ONLINE), states);
    a.sessions.waitFor(t -> true, "the session token");
    assertEquals(1, a.sessions.count());
    String token = a.sessions.items().get(0);
    assertTrue(token.startsWith("nst_"), "token prefix");
    assertEquals(token, a.client.sessionToken());
    assertEquals(ep.id, await(a.client.getSelf()).id());

    // Raw TCP only when asked for; the same handshake.
    Tracked tcp =
        Tracked.online(h.wsUrl(), ep, ConnectOptions.builder().transport(Transport.TCP));
    assertEquals(786432, tcp.client.serverInfo().maxFrameBytes());
    assertEquals(ep.id, await(tcp.client.getSelf()).id());
  }

  @Test
  void checklist13PasswordChangeOldPasswordFailsNoReconnect() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ep);
    failsWith("unauthorized", a.client.changeLoginPassword("not-the-password", "new-password-1"));
    await(a.client.changeLoginPassword(ep.password, "new-password-1"));
    a.sessions.waitCount(2, t -> true, "a second token");
    assertEquals(2, a.sessions.count(), "the change issues a new token");
    assertNotEquals(a.sessions.items().get(0), a.sessions.items().get(1));
    assertEquals(a.sessions.items().get(1), a.client.sessionToken());
    a.client.close();

    Tracked b = Tracked.online(h.wsUrl(), new Harness.Endpoint(ep.id, "new-password-1"));
    assertEquals(ep.id, await(b.client.getSelf()).id());
    b.client.close();

    try (Proxy proxy = Proxy.start(h.address())) {
      Tracked old =
          Tracked.track("ws://" + proxy.address() + "/mqtt", ep.id, Credential.password(ep.password));
      CompletableFuture<SendResult> queued = old.client.send(ep.id, "queued before the refusal");
      ConnectionEvent ev = old.waitState(ConnectionState.AUTH_FAILED);
      assertEquals("bad_credentials", ev.reason());
      assertEquals("auth_failed", ev.error().code());
      failsWith("auth_failed", queued);
      failsWith("auth_failed", old.client.ready());
      assertEquals(1, proxy.accepted.count());
      proxy.accepted.expectNone(x -> true, "a reconnect after auth_failed", NO_RECONNECT_WINDOW_MS);
      assertEquals(ConnectionState.AUTH_FAILED, old.client.state());
    }
  }

  @Test
  void checklist15SessionTokens() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    try (Proxy proxy = Proxy.start(h.address())) {
      // Password login through a proxy we can cut: the SDK's own reconnect uses the token.
      Tracked a = Tracked.online("ws://" + proxy.address() + "/mqtt", ep);
      String token = a.sessions.waitFor(t -> true, "token");
      assertTrue(token.startsWith("nst_"));
      proxy.cut();
      a.waitState(ConnectionState.RECONNECTING);
      a.states.waitCount(2, s -> s.state() == ConnectionState.ONLINE, "online again");
      assertEquals(2, proxy.accepted.count(), "one reconnect");
      assertEquals(1, a.sessions.count(), "a token reconnect issues no new token");
      assertEquals(token, a.client.sessionToken());
      a.client.close();

      // An application restart: connect with the saved token.
      Tracked b = Tracked.track(h.wsUrl(), ep.id, Credential.sessionToken(token));
      await(b.client.ready());
      assertEquals(0, b.sessions.count());

      // A password login elsewhere takes over (0x8E) and replaces the token.
      Tracked c = Tracked.online(h.wsUrl(), ep);
      ConnectionEvent kicked = b.waitState(ConnectionState.KICKED);
      assertEquals("taken_over", kicked.reason());
      String newToken = c.sessions.waitFor(t -> true, "the new token");
      assertNotEquals(token, newToken);

      int before = proxy.accepted.count();
      Tracked stale =
          Tracked.track("ws://" + proxy.address() + "/mqtt", ep.id, Credential.sessionToken(token));
      ConnectionEvent refused = stale.waitState(ConnectionState.AUTH_FAILED);
      assertEquals("session_invalid", refused.reason());
      proxy.accepted.expectNone(x -> true, "a reconnect after session_invalid", NO_RECONNECT_WINDOW_MS);
      assertEquals(before + 1, proxy.accepted.count());

      // logout invalidates the token and stops the client.
      await(c.client.logout());
      ConnectionEvent off = c.waitState(ConnectionState.OFFLINE);
      assertEquals("logout", off.reason());
      failsWith("closed", c.client.getSelf());
      failsWith("closed", c.client.send(ep.id, "after logout"));
      Tracked after = Tracked.track(h.wsUrl(), ep.id, Credential.sessionToken(newToken));
      assertEquals("session_invalid", after.waitState(ConnectionState.AUTH_FAILED).reason());
    }
  }
}
