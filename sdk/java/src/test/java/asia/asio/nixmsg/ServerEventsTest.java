package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.codeOf;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static asia.asio.nixmsg.testing.Tracked.byId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Behaviour of spec 9 beyond the checklist, as sdk/ts/test/integration/server_events.test.ts:
 * fatal frames, admin kicks, revoked frames, manual acks, rate limiting, presence, the directory
 * and group events.
 */
class ServerEventsTest extends HarnessTest {
  static String via(Proxy p) {
    return "ws://" + p.address() + "/mqtt";
  }

  @Test
  void fatalStopsTheClientWithTheReasonAndNoReconnect() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    try (Proxy proxy = Proxy.start(h.address())) {
      Tracked a = Tracked.online(via(proxy), ep);
      JsonObject body = new JsonObject();
      body.addProperty("enabled", false);
      assertEquals(200, h.admin("PATCH", "/api/admin/endpoints/" + ep.id, body));
      ConnectionEvent ev = a.waitState(ConnectionState.KICKED);
      assertEquals("disabled", ev.reason());
      failsWith("kicked", a.client.send(ep.id, "x"));
      proxy.accepted.expectNone(
          x -> true, "a reconnect after fatal", ChecklistLoginTest.NO_RECONNECT_WINDOW_MS);
    }
  }

  @Test
  void anAdminKickOnlyDisconnectsAndTheClientReconnectsWithItsToken() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ep);
    assertEquals(200, h.admin("POST", "/api/admin/endpoints/" + ep.id + "/kick", null));
    a.waitState(ConnectionState.RECONNECTING);
    a.states.waitCount(2, s -> s.state() == ConnectionState.ONLINE, "online again");
    assertEquals(1, a.sessions.count(), "reconnected with the token");
    assertEquals(ep.id, await(a.client.getSelf()).id());
  }

  @Test
  void manualModeRecalledUnackedMessageIsRevokedAndNotAcked() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb, ConnectOptions.builder().ackMode(AckMode.MANUAL));
    SendOptions keep = SendOptions.builder().keep(true).build();
    SendResult sent = await(a.client.send(eb.id, "recall after push", keep));
    Message got = b.messages.waitFor(byId(sent.id()), "the message");
    assertEquals("recalled", await(a.client.recall(sent.id())).result());
    Revoked rev = b.revoked.waitFor(x -> x.id().equals(sent.id()), "revoked");
    assertEquals(new Revoked(sent.id(), ea.id, "recalled"), rev);
    await(b.client.ack(got)); // too late: not sent
    SendResult kept = await(a.client.send(eb.id, "acked by hand", keep));
    Message m2 = b.messages.waitFor(byId(kept.id()), "the second message");
    await(b.client.ack(m2));
    Receipt receipt = a.receipts.waitFor(x -> x.id().equals(kept.id()), "receipt");
    assertEquals("accepted", receipt.state());
    assertEquals(0, a.receipts.count(x -> x.id().equals(sent.id())), "a recall has no receipt");
  }

  @Test
  void manualModeAckAfterTheServerDroppedTheDeliveryCountsAsRevoked() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb, ConnectOptions.builder().ackMode(AckMode.MANUAL));
    SendResult sent = await(a.client.send(eb.id, "ack me late")); // dropped after the 2 s timeout
    Message got = b.messages.waitFor(byId(sent.id()), "the message");
    Receipt dropped = a.receipts.waitFor(x -> x.id().equals(sent.id()), "the dropped receipt", 10_000);
    assertEquals("dropped", dropped.state());
    // The server also sends revoked (best effort); either way the app learns it once.
    b.revoked.waitFor(x -> x.id().equals(sent.id()), "revoked");
    await(b.client.ack(got));
    assertEquals(1, b.revoked.count(x -> x.id().equals(sent.id())));
  }

  @Test
  void sendsBeyondTheRateLimitAreRetriedAndAllArriveOnce() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    int n = 250; // the bucket holds 100 and refills 50/s
    List<CompletableFuture<SendResult>> sends = new ArrayList<>();
    SendOptions noReceipt = SendOptions.builder().receipt(false).build();
    for (int i = 0; i < n; i++) sends.add(a.client.send(eb.id, "n" + i, noReceipt));
    Set<String> ids = new HashSet<>();
    for (CompletableFuture<SendResult> f : sends) ids.add(f.get(30, TimeUnit.SECONDS).id());
    assertEquals(n, ids.size());
    long deadline = System.currentTimeMillis() + 30_000;
    while (b.messages.count() < n && System.currentTimeMillis() < deadline) {
      b.messages.waitFor(m -> b.messages.count() >= n, n + " messages", 30_000);
    }
    Set<String> texts = new HashSet<>();
    for (Message m : b.messages.items()) texts.add(m.text());
    assertEquals(n, texts.size(), "each once");
    assertEquals(n, b.messages.count());
    // Other requests get rate_limited directly.
    List<CompletableFuture<SelfInfo>> burst = new ArrayList<>();
    for (int i = 0; i < 150; i++) burst.add(a.client.getSelf());
    int limited = 0;
    for (CompletableFuture<SelfInfo> f : burst) {
      try {
        f.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        assertEquals(ErrorCodes.RATE_LIMITED, codeOf(e));
        limited++;
      }
    }
    assertTrue(limited > 0, "some requests were refused");
  }

  @Test
  void presenceDirectoryAndNoticesWatchedAgainAfterReconnect() throws Exception {
    Harness.Endpoint ea = h.endpoint("Alpha");
    Harness.Endpoint eb = h.endpoint("Beta");
    try (Proxy proxy = Proxy.start(h.address())) {
      Tracked a = Tracked.online(via(proxy), ea);
      await(a.client.watchPresence(Arrays.asList(eb.id)));
      Tracked b = Tracked.online(h.wsUrl(), eb);
      PresenceEvent on = a.presence.waitFor(p -> p.id().equals(eb.id) && p.online(), "B online");
      assertTrue(on.atMs() > 0);
      List<PresenceInfo> list = await(a.client.presence(Arrays.asList(ea.id, eb.id, "nobody-here")));
      assertTrue(list.get(0).online());
      assertTrue(list.get(1).online());
      assertTrue(list.get(2).notFound());
      Page<DirectoryEntry> dir = await(a.client.directory("", "beta", 100));
      assertTrue(
          dir.items().stream().anyMatch(e -> e.id().equals(eb.id) && e.name().equals("Beta") && e.online()));
      b.client.close();
      a.presence.waitFor(p -> p.id().equals(eb.id) && !p.online(), "B offline");

      // The server forgets the watch with the connection; the SDK sends it again.
      proxy.cut();
      a.states.waitCount(2, s -> s.state() == ConnectionState.ONLINE, "A online again");
      await(a.client.getSelf()); // the re-sent watch was handled before this request
      Tracked.online(h.wsUrl(), eb);
      a.presence.waitCount(2, p -> p.id().equals(eb.id) && p.online(), "B online, seen again");

      await(a.client.updateSelf(SelfUpdate.create().name("Alpha 2").defaultDelayMs(0)));
      assertEquals("Alpha 2", await(a.client.getSelf()).name());
    }
  }

  @Test
  void groupEventsReachTheMembers() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    GroupChange g = await(a.client.groups().create("team"));
    assertEquals(0, g.added().size());
    GroupChange added = await(a.client.groups().add(g.groupId(), Arrays.asList(GroupMemberInput.of(eb.id))));
    assertEquals(Arrays.asList(eb.id), added.added());
    await(a.client.groups().rename(g.groupId(), "team 2"));
    GroupEvent renamed =
        b.groupEvents.waitFor(e -> e.event().equals("renamed"), "the renamed event");
    assertEquals(g.groupId(), renamed.groupId());
    failsWith("owner_cannot_leave", a.client.groups().leave(g.groupId()));
    await(a.client.groups().dissolve(g.groupId()));
    b.groupEvents.waitFor(e -> e.event().equals("dissolved"), "the dissolved event");
    failsWith("not_found", b.client.groups().get(g.groupId()));
  }

  @Test
  void closeOnAStalledConnectionWaitsItsBoundThenFailsTheSendInFlight() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    try (Proxy proxy = Proxy.start(h.address())) {
      Tracked a = Tracked.online(via(proxy), ea);
      proxy.holdDown(true); // no PUBACK and no resp come back
      CompletableFuture<SendResult> stalled = a.client.send(eb.id, "stalled");
      long started = System.nanoTime();
      a.client.close(1, TimeUnit.SECONDS);
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(tookMs >= 900 && tookMs < 1000 + 3000, "close took " + tookMs + " ms for a 1 s bound");
      failsWith("closed", stalled);
      assertEquals(ConnectionState.OFFLINE, a.client.state());
    }
  }
}
