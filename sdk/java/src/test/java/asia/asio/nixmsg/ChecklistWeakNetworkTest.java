package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Tracked;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Checklist item 16 (spec 13 弱网, sdk/conformance/checklist.md): through toxiproxy, kept
 * messages all arrive, the application sees each exactly once, and every receipt arrives once.
 * Mirrors sdk/ts/test/integration/checklist_weak_network.test.ts step by step, with the harness's
 * toxiproxy commands only.
 */
class ChecklistWeakNetworkTest extends HarnessTest {
  static final int N = 100;
  static final int BATCH = 10;
  static final int KEEPALIVE_B = 10; // the SDK's smallest keep-alive, in seconds
  static final long STEP_MS = 30_000;
  static final Predicate<ConnectionEvent> RECONNECTING =
      e -> e.state() == ConnectionState.RECONNECTING;

  /** A harness command from alternating keys and values. */
  static JsonElement command(String cmd, Object... fields) throws Exception {
    JsonObject o = new JsonObject();
    o.addProperty("cmd", cmd);
    for (int i = 0; i < fields.length; i += 2) {
      String key = (String) fields[i];
      Object v = fields[i + 1];
      if (v instanceof JsonElement) o.add(key, (JsonElement) v);
      else if (v instanceof Number) o.addProperty(key, (Number) v);
      else o.addProperty(key, (String) v);
    }
    return h.command(o);
  }

  /** {@code toxic_add} on {@code proxy}; returns the toxic's name. */
  static String addToxic(String proxy, String type, String stream, Object... attributes)
      throws Exception {
    JsonObject attrs = new JsonObject();
    for (int i = 0; i < attributes.length; i += 2) {
      attrs.addProperty((String) attributes[i], (Number) attributes[i + 1]);
    }
    JsonElement toxic =
        command(
            "toxic_add", "proxy", proxy, "type", type, "stream", stream, "attributes", attrs);
    return toxic.getAsJsonObject().get("name").getAsString();
  }

  /** Removes the named toxics, or every toxic of {@code proxy} without names. */
  static void removeToxics(String proxy, String... names) throws Exception {
    if (names.length == 0) command("toxic_remove", "proxy", proxy);
    for (String name : names) command("toxic_remove", "proxy", proxy, "name", name);
  }

  /** {@code GET path} on the admin API; returns the body's {@code data}. */
  static JsonObject admin(String path) throws Exception {
    JsonObject r = command("admin", "method", "GET", "path", path).getAsJsonObject();
    assertEquals(200, r.get("status").getAsInt(), r.toString());
    return r.getAsJsonObject("body").getAsJsonObject("data");
  }

  /** Counts {@code t}'s reconnects now; the returned wait ends at the next one. */
  static Waiter nextReconnect(Tracked t, long timeoutMs, String what) {
    int n = t.states.count(RECONNECTING);
    return () -> t.states.waitCount(n + 1, RECONNECTING, what, timeoutMs);
  }

  interface Waiter {
    void await() throws Exception;
  }

  interface Step {
    void run() throws Exception;
  }

  static int distinctBodies(List<Message> ms) {
    Set<String> bodies = new HashSet<>();
    for (Message m : ms) bodies.add(m.text());
    return bodies.size();
  }

  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void checklist16WeakNetwork() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    // 1. A over raw TCP through PA, B over WebSocket through PB.
    JsonObject pa = command("toxiproxy_start").getAsJsonObject();
    JsonObject pb = command("toxiproxy_start").getAsJsonObject();
    String paTcp = pa.get("tcp_url").getAsString();
    String pbWs = pb.get("ws_url").getAsString();
    assertTrue(paTcp.matches("^mqtt://127\\.0\\.0\\.1:\\d+$"), paTcp);
    assertTrue(pbWs.matches("^ws://127\\.0\\.0\\.1:\\d+/mqtt$"), pbWs);
    String pA = pa.get("name").getAsString();
    String pB = pb.get("name").getAsString();
    try {
      Tracked a = Tracked.online(paTcp, ea, ConnectOptions.builder().transport(Transport.TCP));
      Tracked b = Tracked.online(pbWs, eb, ConnectOptions.builder().keepaliveSeconds(KEEPALIVE_B));
      // b.messages records every run of B's message callback, a.receipts every receipt.
      weakNetwork(ea, eb, pA, pB, a, b);
    } finally {
      // A failed run must not leave a toxic under the clients that stop() closes.
      removeToxics(pA);
      removeToxics(pB);
    }
  }

  void weakNetwork(
      Harness.Endpoint ea, Harness.Endpoint eb, String pa, String pb, Tracked a, Tracked b)
      throws Exception {
    // 2. Latency with jitter on every stream, to the end.
    for (String p : new String[] {pa, pb}) {
      for (String stream : new String[] {"upstream", "downstream"}) {
        addToxic(p, "latency", stream, "latency", 40, "jitter", 30);
      }
    }

    // 3. Ten batches of ten kept messages, each with its disruption.
    List<CompletableFuture<SendResult>> sends = new ArrayList<>();
    Step sendBatch =
        () -> {
          for (int i = 0; i < BATCH; i++) {
            int n = sends.size();
            SendOptions o =
                SendOptions.builder()
                    .keep(true)
                    .ttl(600)
                    .meta(Collections.singletonMap("n", n))
                    .build();
            sends.add(a.client.send(eb.id, "w-" + n, o));
          }
        };
    Step allSoFar =
        () -> {
          int want = sends.size();
          b.messages.waitUntil(
              ms -> distinctBodies(ms) >= want, "B holds " + want + " bodies", STEP_MS);
        };
    Object[] sliced = {"average_size", 16, "size_variation", 8, "delay", 500};
    Map<Integer, Step> steps = new HashMap<>();
    steps.put(
        2,
        () -> {
          String up = addToxic(pb, "slicer", "upstream", sliced);
          String down = addToxic(pb, "slicer", "downstream", sliced);
          String slow = addToxic(pa, "bandwidth", "upstream", "rate", 16);
          sendBatch.run();
          allSoFar.run();
          removeToxics(pb, up, down);
          removeToxics(pa, slow);
        });
    steps.put(
        3,
        () -> {
          String late = addToxic(pb, "latency", "upstream", "latency", 3000);
          sendBatch.run();
          Thread.sleep(3000); // how long the acks are held back, past the 2 s ack timeout
          removeToxics(pb, late);
          allSoFar.run();
        });
    steps.put(
        4,
        () -> {
          Waiter gone = nextReconnect(b, STEP_MS, "B reconnecting after its acks were lost");
          String lost = addToxic(pb, "timeout", "upstream", "timeout", 300);
          sendBatch.run();
          gone.await();
          removeToxics(pb, lost);
          allSoFar.run();
        });
    steps.put(
        5,
        () -> {
          Waiter gone = nextReconnect(a, STEP_MS, "A reconnecting after its responses were lost");
          String lost = addToxic(pa, "timeout", "downstream", "timeout", 300);
          sendBatch.run();
          gone.await();
          removeToxics(pa, lost);
          allSoFar.run();
        });
    steps.put(
        6,
        () -> {
          Waiter gone = nextReconnect(a, STEP_MS, "A reconnecting after reset_peer");
          String reset = addToxic(pa, "reset_peer", "upstream", "timeout", 0);
          sendBatch.run();
          gone.await();
          removeToxics(pa, reset);
          allSoFar.run();
        });
    steps.put(
        7,
        () -> {
          Waiter gone = nextReconnect(b, STEP_MS, "B reconnecting after limit_data");
          String limit = addToxic(pb, "limit_data", "downstream", "bytes", 1500);
          sendBatch.run();
          gone.await();
          removeToxics(pb, limit);
          allSoFar.run();
        });
    steps.put(
        8,
        () -> {
          long bound = KEEPALIVE_B * 1500L + 15_000;
          Waiter gone = nextReconnect(b, bound, "B's keep-alive ending the half-open connection");
          String up = addToxic(pb, "timeout", "upstream", "timeout", 0);
          String down = addToxic(pb, "timeout", "downstream", "timeout", 0);
          sendBatch.run();
          gone.await();
          removeToxics(pb, up, down);
          allSoFar.run();
        });
    steps.put(
        9,
        () -> {
          removeToxics(pa);
          removeToxics(pb);
          sendBatch.run();
          allSoFar.run();
        });
    for (int batch = 1; batch <= N / BATCH; batch++) {
      Step step = steps.get(batch);
      if (step != null) {
        step.run();
      } else {
        sendBatch.run();
        allSoFar.run();
      }
    }

    // 4. Every send answered, A holds N receipts; then a window for late duplicates.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    List<SendResult> sent = new ArrayList<>();
    for (CompletableFuture<SendResult> f : sends) {
      sent.add(f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
    }
    a.receipts.waitCount(N, r -> true, "receipts", 60_000);
    Thread.sleep(3000); // the window in which a late duplicate would show up

    // 5. Exactly once at the application, one accepted receipt per message.
    Set<String> ids = new HashSet<>();
    for (SendResult r : sent) ids.add(r.id());
    assertEquals(N, ids.size(), "distinct message ids");
    Map<String, Integer> seen = new LinkedHashMap<>(); // body -> callback runs
    Map<String, String> idOfBody = new HashMap<>();
    for (Message m : b.messages.items()) {
      seen.merge(m.text(), 1, Integer::sum);
      idOfBody.put(m.text(), m.id());
    }
    for (int i = 0; i < N; i++) {
      assertEquals(sent.get(i).id(), idOfBody.get("w-" + i), "id of w-" + i);
    }
    assertEquals(N, seen.size(), "B's application saw every body");
    List<String> notOnce = new ArrayList<>();
    for (Map.Entry<String, Integer> e : seen.entrySet()) {
      if (e.getValue() != 1) notOnce.add(e.getKey() + " x" + e.getValue());
    }
    assertEquals(Collections.emptyList(), notOnce, "each exactly once");
    List<Receipt> receipts = a.receipts.items();
    assertEquals(N, receipts.size(), "one receipt callback per message");
    Set<String> receiptIds = new HashSet<>();
    Set<String> receiptFor = new HashSet<>();
    for (Receipt r : receipts) {
      receiptIds.add(r.receiptId());
      receiptFor.add(r.id());
      assertEquals("accepted", r.state(), r.toString());
      assertEquals(eb.id, r.endpointId(), r.toString());
    }
    assertEquals(N, receiptIds.size(), "distinct receipts");
    assertEquals(ids, receiptFor, "a receipt per id");
    int ra = a.states.count(RECONNECTING);
    int rb = b.states.count(RECONNECTING);
    assertTrue(ra >= 2, "A reconnected " + ra + " times");
    assertTrue(rb >= 2, "B reconnected " + rb + " times");
    assertEquals(0, b.revoked.count(), "nothing revoked at B");

    // 6. The server agrees, and it pushed some messages more than once.
    List<JsonObject> items = new ArrayList<>();
    JsonObject list = admin("/api/admin/messages?sender=" + ea.id + "&limit=200");
    for (JsonElement e : list.getAsJsonArray("items")) items.add(e.getAsJsonObject());
    assertEquals(N, items.size(), "one record per send");
    Set<String> records = new HashSet<>();
    int attempts = 0;
    for (JsonObject m : items) {
      String id = m.get("id").getAsString();
      records.add(id);
      assertEquals("completed", m.get("state").getAsString(), "record " + id);
      int accepted = m.getAsJsonObject("counts").get("accepted").getAsInt();
      assertEquals(1, accepted, "record " + id + " accepted once");
      JsonObject detail = admin("/api/admin/messages/" + m.get("seq").getAsLong());
      for (JsonElement d : detail.getAsJsonArray("items")) {
        attempts += d.getAsJsonObject().get("attempts").getAsInt();
      }
    }
    assertEquals(ids, records, "the records are the sends");
    System.out.println(
        N + " sent, " + seen.size() + " delivered once to the application, " + attempts
            + " server pushes, " + receipts.size() + " receipts; reconnects A " + ra + ", B " + rb);
    assertTrue(attempts > N, "the server pushed again (" + attempts + " pushes for " + N + ")");
  }
}
