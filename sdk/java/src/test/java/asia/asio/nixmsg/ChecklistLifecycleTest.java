package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Events;
import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Checklist item 17 (sdk/conformance/checklist.md, lifecycle): close right after a handler
 * returns loses no ack, close drains what is in flight within its bound and fails the rest with
 * {@code closed}, close is idempotent from any state, every call after it fails with {@code
 * closed}, nothing outlives it, and a client that stopped for good releases its threads without
 * close.
 */
class ChecklistLifecycleTest extends HarnessTest {
  /**
   * Rounds of 17a: 20, or {@code NIXMSG_CLOSE_ROUNDS} for the on-demand reproduction
   * (sdk/conformance/close_after_handler.sh).
   */
  static final int ROUNDS = rounds(System.getenv("NIXMSG_CLOSE_ROUNDS"));
  /** Extra time close may take beyond its bound (the clean MQTT close and the thread ends). */
  static final long CLOSE_SLACK_MS = 3000;
  /** "Back to baseline" is polled for this long (checklist 17). */
  static final long BASELINE_WAIT_MS = 5000;

  /**
   * The threads the client side of the JVM runs, by name: the SDK's, Netty's and HiveMQ's. The
   * JVM-wide daemon threads RxJava starts once (RxSchedulerPurge, RxCachedWorkerPoolEvictor) and
   * the common fork-join pool (the harness reads with it) are left out: they are not a client's.
   */
  static Map<String, Integer> clientThreads() {
    Map<String, Integer> out = new TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      String n = t.getName();
      if (!t.isAlive() || n.startsWith("ForkJoinPool.commonPool") || n.startsWith("Rx")) continue;
      if (n.startsWith("nixmsg-") || n.contains("hivemq") || n.contains("netty") || n.contains("EventLoop")) {
        out.merge(n.replaceAll("-\\d+$", "-N"), 1, Integer::sum);
      }
    }
    return out;
  }

  static int rounds(String env) {
    if (env == null || env.isEmpty()) return 20;
    int n = Integer.parseInt(env);
    if (n < 1) throw new IllegalArgumentException("NIXMSG_CLOSE_ROUNDS must be positive: " + env);
    return n;
  }

  static int count(Map<String, Integer> threads) {
    int n = 0;
    for (int v : threads.values()) n += v;
    return n;
  }

  /** Polls (bounded) until no more client threads are alive than at {@code baseline}. */
  static void backTo(Map<String, Integer> baseline, String what) throws InterruptedException {
    long deadline = System.currentTimeMillis() + BASELINE_WAIT_MS;
    Map<String, Integer> now;
    while (count(now = clientThreads()) > count(baseline)) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError(what + ": threads left " + now + ", baseline " + baseline);
      }
      Thread.sleep(50);
    }
  }

  static JsonObject admin(String path) throws Exception {
    JsonObject cmd = new JsonObject();
    cmd.addProperty("cmd", "admin");
    cmd.addProperty("method", "GET");
    cmd.addProperty("path", path);
    JsonObject answer = h.command(cmd).getAsJsonObject();
    assertEquals(200, answer.get("status").getAsInt(), answer.toString());
    return answer.getAsJsonObject("body").getAsJsonObject("data");
  }

  /**
   * Deliveries from {@code sender} to {@code recipient} not {@code accepted}, as the server sees
   * them now (no retry loop: close has waited for the ack responses).
   */
  static int notAccepted(String sender, String recipient, int expected) throws Exception {
    JsonArray items =
        admin("/api/admin/messages?sender=" + sender + "&recipient=" + recipient + "&limit=200")
            .getAsJsonArray("items");
    assertEquals(expected, items.size(), "message records");
    int bad = 0;
    for (JsonElement m : items) {
      JsonArray detail =
          admin("/api/admin/messages/" + m.getAsJsonObject().get("seq").getAsString())
              .getAsJsonArray("items");
      for (JsonElement d : detail) {
        JsonObject o = d.getAsJsonObject();
        if (o.get("endpoint_id").getAsString().equals(recipient)
            && !o.get("state").getAsString().equals("accepted")) {
          bad++;
        }
      }
    }
    return bad;
  }

  static int closedPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  static NixMsgClient connect(String url, Harness.Endpoint ep) {
    return NixMsgClient.connect(url, ep.id, Credential.password(ep.password));
  }

  static long elapsedMs(long startedNanos) {
    return (System.nanoTime() - startedNanos) / 1_000_000;
  }

  @Test
  void checklist17aCloseAsTheHandlerReturnsLosesNoAck() throws Exception {
    Map<String, Integer> baseline = clientThreads();
    Harness.Endpoint ea = h.endpoint();
    NixMsgClient a = connect(h.wsUrl(), ea);
    await(a.ready());
    int redelivered = 0;
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
      Harness.Endpoint eb = h.endpoint();
      List<String> bodies = new ArrayList<>();
      for (int i = 1; i <= 5; i++) bodies.add("r" + r + "-" + i);
      SendOptions kept = SendOptions.builder().keep(true).ttl(600).build();
      for (String body : bodies) await(a.send(eb.id, body, kept));
      List<String> got = new ArrayList<>();
      CountDownLatch fifth = new CountDownLatch(1);
      NixMsgClient b = NixMsgClient.create(h.wsUrl(), eb.id, Credential.password(eb.password), null);
      b.onMessage(
          msg -> {
            synchronized (got) {
              got.add(msg.text());
              // The test thread calls close now, as this callback returns.
              if (got.size() == 5) fifth.countDown();
            }
          });
      b.start();
      assertTrue(fifth.await(Events.WAIT_MS, TimeUnit.MILLISECONDS), "round " + r + ": " + got);
      long started = System.nanoTime();
      b.close(5, TimeUnit.SECONDS);
      long took = elapsedMs(started);
      assertTrue(took < 5000 + CLOSE_SLACK_MS, "round " + r + ": close took " + took + " ms");
      synchronized (got) {
        assertEquals(bodies, got);
      }
      bad += notAccepted(ea.id, eb.id, 5);

      Events<String> again = new Events<>();
      NixMsgClient b2 = NixMsgClient.create(h.wsUrl(), eb.id, Credential.password(eb.password), null);
      b2.onMessage(m -> again.push(m.text()));
      b2.start();
      await(b2.ready());
      String marker = "marker-" + r;
      await(a.send(eb.id, marker, SendOptions.builder().keep(true).build()));
      again.waitFor(marker::equals, "round " + r + ": the marker");
      redelivered += again.count(bodies::contains);
      b2.close();
    }
    // The reproduction's result line (sdk/conformance/close_after_handler.sh reads it from
    // Surefire's output file).
    System.out.println("rounds=" + ROUNDS + " redelivered=" + redelivered + " not_accepted=" + bad);
    assertEquals(
        "0 redeliveries, 0 not accepted",
        redelivered + " redeliveries, " + bad + " not accepted",
        "over " + ROUNDS + " rounds");
    a.close();
    backTo(baseline, "after 17a");
  }

  @Test
  void checklist17bCloseDrainsInFlightRequestsThenFailsTheRest() throws Exception {
    Map<String, Integer> baseline = clientThreads();
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked b = Tracked.online(h.wsUrl(), eb);
    NixMsgClient a = connect(h.wsUrl(), ea);
    await(a.ready());
    CompletableFuture<SendResult> sent = a.send(eb.id, "in flight");
    a.close(5, TimeUnit.SECONDS);
    SendResult result = sent.getNow(null);
    assertNotNull(result, "answered during close");
    b.messages.waitFor(Tracked.byId(result.id()), "the message at B");
    assertEquals(1, b.messages.count(Tracked.byId(result.id())));

    // Bound: nothing reaches A2 any more (its proxy holds every byte back), the connection stays
    // open: what checklist 17b.3's toxiproxy timeout toxic does.
    try (Proxy proxy = Proxy.start(h.address())) {
      NixMsgClient a2 = connect("ws://" + proxy.address() + "/mqtt", ea);
      await(a2.ready());
      proxy.holdDown(true);
      Map<String, CompletableFuture<?>> calls = new LinkedHashMap<>();
      calls.put("send", a2.send(eb.id, "never answered"));
      calls.put("status", a2.status(result.id()));
      calls.put("getSelf", a2.getSelf());
      long started = System.nanoTime();
      a2.close(1, TimeUnit.SECONDS);
      long took = elapsedMs(started);
      assertTrue(took >= 900 && took < 1000 + CLOSE_SLACK_MS, "close took " + took + " ms for a 1 s bound");
      for (Map.Entry<String, CompletableFuture<?>> c : calls.entrySet()) {
        assertTrue(c.getValue().isDone(), c.getKey() + " is not left pending");
        failsWith(ErrorCodes.CLOSED, c.getValue());
      }
    }
    b.client.close();
    backTo(baseline, "after 17b");
  }

  @Test
  void checklist17cCloseIsIdempotentFromAnyState() throws Exception {
    Map<String, Integer> baseline = clientThreads();
    // c.1: built, never started.
    NixMsgClient unstarted =
        NixMsgClient.create(h.wsUrl(), "never-1", Credential.password("p"), null);
    unstarted.close();
    unstarted.close();

    // c.2: connecting to a port where nothing listens.
    NixMsgClient nowhere =
        NixMsgClient.connect("ws://127.0.0.1:" + closedPort() + "/mqtt", "x1", Credential.password("p"));
    nowhere.close(1, TimeUnit.SECONDS);
    assertEquals(ConnectionState.OFFLINE, nowhere.state());

    // c.3: online, twice in a row, then twice concurrently.
    Harness.Endpoint ep = h.endpoint();
    NixMsgClient c = connect(h.wsUrl(), ep);
    await(c.ready());
    c.close();
    c.close();
    Thread[] both = {new Thread(c::close), new Thread(c::close)};
    for (Thread t : both) t.start();
    for (Thread t : both) {
      t.join(5000 + CLOSE_SLACK_MS);
      assertTrue(!t.isAlive(), "a concurrent close returned");
    }
    assertEquals(ConnectionState.OFFLINE, c.state());
    callsFailWith(c, ErrorCodes.CLOSED);

    // c.4: inside callbacks (a connection callback when online, a message callback).
    Harness.Endpoint e1 = h.endpoint();
    CountDownLatch returned = new CountDownLatch(1);
    Events<ConnectionEvent> states = new Events<>();
    NixMsgClient inside = NixMsgClient.create(h.wsUrl(), e1.id, Credential.password(e1.password), null);
    inside.onConnection(
        ev -> {
          states.push(ev);
          if (ev.state() == ConnectionState.ONLINE) {
            inside.close();
            returned.countDown();
          }
        });
    inside.start();
    assertTrue(returned.await(Events.WAIT_MS, TimeUnit.MILLISECONDS), "close returned in the callback");
    states.waitFor(e -> e.state() == ConnectionState.OFFLINE && "closed".equals(e.reason()), "offline, closed");

    Harness.Endpoint e2 = h.endpoint();
    Tracked sender = Tracked.online(h.wsUrl(), h.endpoint());
    CountDownLatch msgReturned = new CountDownLatch(1);
    NixMsgClient inMsg = NixMsgClient.create(h.wsUrl(), e2.id, Credential.password(e2.password), null);
    inMsg.onMessage(
        m -> {
          inMsg.close();
          msgReturned.countDown();
        });
    inMsg.start();
    await(inMsg.ready());
    await(sender.client.send(e2.id, "close me", SendOptions.builder().keep(true).build()));
    assertTrue(msgReturned.await(Events.WAIT_MS, TimeUnit.MILLISECONDS), "close returned in the callback");

    // c.5: after auth_failed and after kicked; the earlier stop is kept.
    NixMsgClient wrong = NixMsgClient.connect(h.wsUrl(), ep.id, Credential.password("wrong-password"));
    failsWith(ErrorCodes.AUTH_FAILED, wrong.ready());
    wrong.close();
    wrong.close();
    assertEquals(ConnectionState.AUTH_FAILED, wrong.state());
    NixMsgClient first = connect(h.wsUrl(), ep);
    await(first.ready());
    NixMsgClient second = connect(h.wsUrl(), ep);
    await(second.ready());
    failsWith(ErrorCodes.KICKED, first.ready(5, TimeUnit.SECONDS));
    first.close();
    assertEquals(ConnectionState.KICKED, first.state());
    second.close();
    sender.client.close();
    backTo(baseline, "after 17c");
  }

  /** Checklist 17d: every call fails with {@code code} at once (no round trip, no timeout). */
  static void callsFailWith(NixMsgClient c, String code) throws Exception {
    Message msg =
        new Message("0", "x", Target.endpoint(c.endpointId()), "", "text/plain", null, 0);
    Map<String, Supplier<CompletableFuture<?>>> calls = new LinkedHashMap<>();
    calls.put("send", () -> c.send("x", "y"));
    calls.put("recall", () -> c.recall("id"));
    calls.put("status", () -> c.status("id"));
    calls.put("ack", () -> c.ack(msg));
    calls.put("unlock", () -> c.unlock("x", "pw"));
    calls.put("getSelf", c::getSelf);
    calls.put("updateSelf", () -> c.updateSelf(SelfUpdate.create().name("n")));
    calls.put("setTalkPassword", () -> c.setTalkPassword("pw"));
    calls.put("changeLoginPassword", () -> c.changeLoginPassword("a", "b"));
    calls.put("presence", () -> c.presence(Arrays.asList("x")));
    calls.put("directory", c::directory);
    calls.put("watchPresence", () -> c.watchPresence(Arrays.asList("x")));
    calls.put("logout", c::logout);
    calls.put("groups.list", () -> c.groups().list());
    calls.put("ready", c::ready);
    for (Map.Entry<String, Supplier<CompletableFuture<?>>> e : calls.entrySet()) {
      long started = System.nanoTime();
      CompletableFuture<?> f = e.getValue().get();
      NixMsgException err = failsWith(code, f);
      assertNotNull(err, e.getKey());
      assertTrue(elapsedMs(started) < 1000, e.getKey() + " failed at once");
    }
  }

  @Test
  void checklist17fAStoppedClientReleasesItsThreadsWithoutClose() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    Map<String, Integer> baseline = clientThreads();
    NixMsgClient wrong = NixMsgClient.connect(h.wsUrl(), ep.id, Credential.password("wrong-password"));
    NixMsgException refused = failsWith(ErrorCodes.AUTH_FAILED, wrong.ready());
    assertEquals("bad_credentials", refused.reason());
    backTo(baseline, "after auth_failed without close");
    callsFailWith(wrong, ErrorCodes.AUTH_FAILED);

    NixMsgClient first = connect(h.wsUrl(), ep);
    await(first.ready());
    NixMsgClient second = connect(h.wsUrl(), ep);
    await(second.ready());
    NixMsgException kicked = failsWith(ErrorCodes.KICKED, first.ready(5, TimeUnit.SECONDS));
    assertEquals("taken_over", kicked.reason());
    second.close();
    backTo(baseline, "after kicked without close");
    callsFailWith(first, ErrorCodes.KICKED);
  }

  @Test
  void readyWithATimeoutReportsTheLastTransportError() throws Exception {
    Map<String, Integer> baseline = clientThreads();
    NixMsgClient c =
        NixMsgClient.create("ws://127.0.0.1:" + closedPort() + "/mqtt", "x1", Credential.password("p"), null);
    Events<ConnectionEvent> states = new Events<>();
    c.onConnection(states::push);
    c.start();
    // After the first failed attempt (its time varies: the first client of a JVM loads Netty).
    states.waitFor(e -> e.state() == ConnectionState.RECONNECTING, "the first failed attempt");
    CompletableFuture<ServerInfo> ready = c.ready(1500, TimeUnit.MILLISECONDS);
    NixMsgException err = failsWith(ErrorCodes.TIMEOUT, ready);
    assertNotNull(err.getCause(), err.getMessage() + "; states " + states.items());
    NixMsgException last = assertInstanceOf(NixMsgException.class, err.getCause(), err.getMessage());
    assertEquals(ErrorCodes.NETWORK, last.code());
    Throwable root = last.getCause();
    while (root != null && !(root instanceof ConnectException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertInstanceOf(ConnectException.class, root, "the refused connection is the cause");
    ConnectionEvent retry = states.waitFor(e -> e.state() == ConnectionState.RECONNECTING, "reconnecting");
    assertEquals("network_error", retry.reason());
    assertNotNull(retry.error());
    c.close();
    backTo(baseline, "after the refused connection");
  }

  @Test
  void futuresCompleteOnTheClientsOwnBoundedPool() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked.online(h.wsUrl(), eb);
    NixMsgClient a = connect(h.wsUrl(), ea);
    await(a.ready());
    Map<String, Integer> before = clientThreads();
    List<CompletableFuture<Void>> slow = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      slow.add(
          a.send(eb.id, "n" + i)
              .thenAccept(
                  r -> {
                    try {
                      Thread.sleep(20);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }));
    }
    CompletableFuture.allOf(slow.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
    int futures = clientThreads().getOrDefault("nixmsg-futures-" + ea.id + "-N", 0);
    assertTrue(futures <= 2, "completion threads: " + futures + " (" + clientThreads() + ", before " + before + ")");
    a.close();
  }
}
