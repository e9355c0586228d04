package asia.asio.nixmsg;

import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * The in-memory send queue of spec 9 ("发送"): at most {@code capacity} sends held (in flight
 * included), at most {@code maxInFlight} published without a response, the same id and content
 * when replayed after a reconnect, and {@code rate_limited} answers retried with backoff. Not
 * thread safe: the client uses it from its one core thread.
 */
final class SendQueue {
  /** What to do with a {@code resp} to a send. */
  enum Outcome {
    DONE,
    RETRY,
    UNKNOWN
  }

  /** A send taken for publishing. */
  static final class Taken {
    final String rid;
    final JsonObject frame;

    Taken(String rid, JsonObject frame) {
      this.rid = rid;
      this.frame = frame;
    }
  }

  private static final class Entry {
    final JsonObject frame;
    final CompletableFuture<SendResult> result = new CompletableFuture<>();
    String rid;
    long notBefore;
    Backoff retry;

    Entry(JsonObject frame) {
      this.frame = frame;
    }
  }

  private final int capacity;
  private final int maxInFlight;
  private final DoubleSupplier random;
  /** In the order of send calls; replay after a reconnect keeps it. */
  private final List<Entry> entries = new ArrayList<>();

  private final Map<String, Entry> byRid = new HashMap<>();
  private NixMsgException closed;

  /** The results of the sends published and waiting for their resp. */
  List<CompletableFuture<SendResult>> inFlightFutures() {
    List<CompletableFuture<SendResult>> out = new ArrayList<>();
    for (Entry e : byRid.values()) out.add(e.result);
    return out;
  }

  SendQueue(int capacity, int maxInFlight, DoubleSupplier random) {
    this.capacity = capacity;
    this.maxInFlight = maxInFlight;
    this.random = random;
  }

  /** Sends held, in flight included. */
  int size() {
    return entries.size();
  }

  /** Sends published and waiting for their resp. */
  int inFlight() {
    return byRid.size();
  }

  /** Queues a send; fails at once with {@code queue_full} or the error the queue closed with. */
  CompletableFuture<SendResult> add(JsonObject frame) {
    CompletableFuture<SendResult> failed = new CompletableFuture<>();
    if (closed != null) {
      failed.completeExceptionally(closed);
      return failed;
    }
    if (entries.size() >= capacity) {
      failed.completeExceptionally(
          new NixMsgException(
              "queue_full", "The send queue already holds " + capacity + " messages"));
      return failed;
    }
    Entry e = new Entry(frame);
    entries.add(e);
    return e.result;
  }

  /** The next send to publish under a new rid, or null when the window is full or none is due. */
  Taken take(long now, Supplier<String> rid) {
    if (byRid.size() >= maxInFlight) return null;
    for (Entry e : entries) {
      if (e.rid == null && e.notBefore <= now) {
        e.rid = rid.get();
        byRid.put(e.rid, e);
        return new Taken(e.rid, e.frame);
      }
    }
    return null;
  }

  /** Earliest time a waiting send becomes due, when one waits for a retry; else null. */
  Long nextDueAt(long now) {
    Long at = null;
    for (Entry e : entries) {
      if (e.rid != null || e.notBefore <= now) continue;
      at = at == null ? e.notBefore : Math.min(at, e.notBefore);
    }
    return at;
  }

  /** True when {@code rid} belongs to a send in flight. */
  boolean has(String rid) {
    return byRid.containsKey(rid);
  }

  /**
   * Applies the resp of a send: success or a final error settles the call; {@code rate_limited}
   * puts the send back with a backoff delay (spec 9: not a failure).
   */
  Outcome settle(String rid, boolean ok, JsonObject data, NixMsgException error, long now) {
    Entry e = byRid.remove(rid);
    if (e == null) return Outcome.UNKNOWN;
    e.rid = null;
    if (!ok && error != null && "rate_limited".equals(error.code())) {
      if (e.retry == null) e.retry = new Backoff(1000, 30_000, 0.3, random);
      e.notBefore = now + e.retry.next();
      return Outcome.RETRY;
    }
    entries.remove(e);
    if (ok) {
      String id = Json.isString(data, "id") ? Json.str(data, "id") : Json.str(e.frame, "id");
      String state = Json.isString(data, "state") ? Json.str(data, "state") : "dispatched";
      e.result.complete(new SendResult(id, Json.num(data, "send_at_ms"), state));
    } else {
      e.result.completeExceptionally(
          error != null ? error : new NixMsgException("bad_response", "Send failed without an error"));
    }
    return Outcome.DONE;
  }

  /** The connection is gone: sends in flight wait to be published again, unchanged. */
  void requeueInFlight() {
    for (Entry e : byRid.values()) e.rid = null;
    byRid.clear();
  }

  /** Ends every held send with {@code error}, and refuses new ones with it (spec 9). */
  void close(NixMsgException error) {
    if (closed == null) closed = error;
    List<Entry> all = new ArrayList<>(entries);
    entries.clear();
    byRid.clear();
    for (Iterator<Entry> it = all.iterator(); it.hasNext(); ) {
      it.next().result.completeExceptionally(error);
    }
  }
}
