package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import org.junit.jupiter.api.Test;

/** Checklist items 10 and 12 (spec 9 接入清单): takeover by a second login, and registration. */
class ChecklistTakeoverRegisterTest extends HarnessTest {
  @Test
  void checklist10SecondLoginKicksFirstWhichDoesNotReconnect() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    try (Proxy proxy = Proxy.start(h.address())) {
      Tracked first = Tracked.online("ws://" + proxy.address() + "/mqtt", ep);
      Tracked second =
          Tracked.online(h.wsUrl(), ep, ConnectOptions.builder().transport(Transport.TCP));
      ConnectionEvent kicked = first.waitState(ConnectionState.KICKED);
      assertEquals("taken_over", kicked.reason());
      assertEquals("kicked", kicked.error().code());
      NixMsgException e = failsWith("kicked", first.client.send(ep.id, "after the kick"));
      assertEquals("taken_over", e.reason());
      proxy.accepted.expectNone(
          x -> true, "a reconnect after the kick", ChecklistLoginTest.NO_RECONNECT_WINDOW_MS);
      assertEquals(1, proxy.accepted.count());
      assertEquals(ConnectionState.KICKED, first.client.state());
      assertEquals(ConnectionState.ONLINE, second.client.state());
      assertEquals(ep.id, await(second.client.getSelf()).id(), "the second stays in");
    }
  }

  @Test
  void checklist12Registration() throws Exception {
    String url = h.wsUrl();
    h.registration(false, null);
    NixMsgException closed =
        failsWith(
            "registration_closed",
            NixMsgClient.register(
                url,
                "whatever-code",
                RegisterOptions.builder().id("reg-closed").loginPassword("password-1").build()));
    assertEquals(403, closed.status());
    h.registration(true, "code-one-1111");
    failsWith(
        "registration_code_invalid",
        NixMsgClient.register(
            url,
            "wrong-code-000",
            RegisterOptions.builder().id("reg-wrong").loginPassword("password-1").build()));

    String id = "reg-j" + ProcessHandle.current().pid();
    RegisterResult r =
        await(
            NixMsgClient.register(
                url,
                "code-one-1111",
                RegisterOptions.builder().id(id).loginPassword("password-1").name("门口").build()));
    assertEquals(id, r.id());
    assertNull(r.loginPassword(), "no password returned when the caller chose one");
    Tracked a = Tracked.online(url, new Harness.Endpoint(id, "password-1"));
    SelfInfo self = await(a.client.getSelf());
    assertEquals("门口", self.name());
    assertEquals("self", self.source());
    a.client.close();
    failsWith(
        "id_taken",
        NixMsgClient.register(
            url, "code-one-1111", RegisterOptions.builder().id(id).loginPassword("password-1").build()));

    RegisterResult gen =
        await(
            NixMsgClient.register(
                url, "code-one-1111", RegisterOptions.builder().name("generated").build()));
    assertTrue(gen.id().startsWith("e_"), gen.id());
    assertEquals(20, gen.loginPassword().length());
    Tracked g = Tracked.online(url, new Harness.Endpoint(gen.id(), gen.loginPassword()));
    g.client.close();

    h.registration(true, "code-two-2222");
    failsWith(
        "registration_code_invalid",
        NixMsgClient.register(
            url, "code-one-1111", RegisterOptions.builder().id("reg-old-code").build()));
    Tracked again = Tracked.online(url, new Harness.Endpoint(id, "password-1"));
    assertEquals(id, await(again.client.getSelf()).id(), "registered endpoints still log in");
    RegisterResult next = await(NixMsgClient.register(h.tcpUrl(), "code-two-2222", RegisterOptions.none()));
    assertTrue(next.id().startsWith("e_"), "the TCP URL maps to the same HTTP API");
  }
}
