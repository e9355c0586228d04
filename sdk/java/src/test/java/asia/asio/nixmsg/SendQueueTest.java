package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The send queue of spec 9 ("发送"): capacity, window, replay and rate_limited retries. */
class SendQueueTest {
  private int rid;
  private final Supplier<String> rids = () -> "r" + (++rid);

  private static JsonObject frame(String id, String text) {
    return SendFrame.build(
        Target.endpoint("b"),
        text,
        SendOptions.builder().id(id).sendAt(1_800_000_000_000L).build(),
        262_144,
        4096,
        786_432,
        123);
  }

  private static JsonObject ok(String id) {
    JsonObject d = new JsonObject();
    d.addProperty("id", id);
    d.addProperty("send_at_ms", 1_800_000_000_123L);
    d.addProperty("state", "scheduled");
    return d;
  }

  private static String code(CompletableFuture<?> f) {
    assertTrue(f.isCompletedExceptionally());
    try {
      f.get();
      return null;
    } catch (ExecutionException | InterruptedException e) {
      return codeOf(e);
    }
  }

  @Test
  void replayAfterReconnectPublishesTheSameContentInTheSameOrder() {
    SendQueue q = new SendQueue(1000, 100, () -> 0.5);
    CompletableFuture<SendResult> first = q.add(frame("id-1", "one"));
    CompletableFuture<SendResult> second = q.add(frame("id-2", "two"));
    SendQueue.Taken t1 = q.take(0, rids);
    SendQueue.Taken t2 = q.take(0, rids);
    assertNull(q.take(0, rids), "nothing else is due");
    String wire1 = Json.stringify(SendFrame.wire(t1.rid, t1.frame));
    assertEquals(2, q.inFlight());

    // The connection is lost before any resp: both are published again, unchanged, in order.
    q.requeueInFlight();
    assertEquals(0, q.inFlight());
    SendQueue.Taken again1 = q.take(0, rids);
    SendQueue.Taken again2 = q.take(0, rids);
    assertNotEquals(t1.rid, again1.rid, "a new rid on the new connection");
    assertSame(t1.frame, again1.frame);
    assertSame(t2.frame, again2.frame);
    assertEquals(
        wire1.replace("\"rid\":\"" + t1.rid + "\"", "\"rid\":\"" + again1.rid + "\""),
        Json.stringify(SendFrame.wire(again1.rid, again1.frame)),
        "same id, same send_at_ms: the same fingerprint (spec 7.3)");
    assertEquals(1_800_000_000_123L, again1.frame.get("send_at_ms").getAsLong());

    // The stale rid answers nothing; the new one settles the call.
    assertEquals(SendQueue.Outcome.UNKNOWN, q.settle(t1.rid, true, ok("id-1"), null, 0));
    assertEquals(SendQueue.Outcome.DONE, q.settle(again1.rid, true, ok("id-1"), null, 0));
    SendResult r = first.join();
    assertEquals("id-1", r.id());
    assertEquals("scheduled", r.state());
    assertEquals(1_800_000_000_123L, r.sendAtMs());
    assertFalse(second.isDone());
    assertEquals(1, q.size());
  }

  @Test
  void capacityCountsSendsInFlightAndWindowLimitsPublishing() {
    SendQueue q = new SendQueue(3, 2, null);
    q.add(frame("a", "1"));
    q.add(frame("b", "2"));
    q.add(frame("c", "3"));
    assertEquals("queue_full", code(q.add(frame("d", "4"))));
    assertNotNull(q.take(0, rids));
    assertNotNull(q.take(0, rids));
    assertNull(q.take(0, rids), "at most maxInFlight without a resp");
    assertEquals("queue_full", code(q.add(frame("d", "4"))), "in flight still counts");
  }

  @Test
  void rateLimitedIsRetriedWithBackoffNotFailed() {
    SendQueue q = new SendQueue(10, 10, () -> 0.5);
    CompletableFuture<SendResult> f = q.add(frame("a", "x"));
    SendQueue.Taken t = q.take(1000, rids);
    NixMsgException limited = new NixMsgException("rate_limited", "slow down");
    assertEquals(SendQueue.Outcome.RETRY, q.settle(t.rid, false, null, limited, 1000));
    assertFalse(f.isDone());
    assertNull(q.take(1999, rids), "not before the backoff delay");
    assertEquals(Long.valueOf(2000), q.nextDueAt(1000));
    SendQueue.Taken again = q.take(2000, rids);
    assertSame(t.frame, again.frame);
    // A second rate_limited doubles the delay.
    q.settle(again.rid, false, null, limited, 2000);
    assertEquals(Long.valueOf(4000), q.nextDueAt(2000));
    SendQueue.Taken third = q.take(4000, rids);
    NixMsgException bad = new NixMsgException("talk_password_required", "locked");
    assertEquals(SendQueue.Outcome.DONE, q.settle(third.rid, false, null, bad, 4000));
    assertEquals("talk_password_required", code(f), "other errors settle the call");
  }

  @Test
  void closeFailsEveryHeldSendAndRefusesNewOnes() {
    SendQueue q = new SendQueue(10, 10, null);
    CompletableFuture<SendResult> inFlight = q.add(frame("a", "x"));
    CompletableFuture<SendResult> waiting = q.add(frame("b", "y"));
    q.take(0, rids);
    q.close(new NixMsgException("kicked", "taken over"));
    assertEquals("kicked", code(inFlight));
    assertEquals("kicked", code(waiting));
    assertEquals("kicked", code(q.add(frame("c", "z"))));
    assertEquals(0, q.size());
  }
}
