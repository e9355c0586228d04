package asia.asio.nixmsg;

import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** Requests other than {@code send} waiting for their resp, matched by rid (spec 6). */
final class PendingRequests {
  private static final class Pending {
    final CompletableFuture<JsonObject> future = new CompletableFuture<>();
    ScheduledFuture<?> timer;
  }

  private final long timeoutMs;
  private final ScheduledExecutorService core;
  private final Map<String, Pending> map = new HashMap<>();

  PendingRequests(long timeoutMs, ScheduledExecutorService core) {
    this.timeoutMs = timeoutMs;
    this.core = core;
  }

  /** Registers {@code rid}; completes with resp.data, or {@code timeout} when none comes. */
  CompletableFuture<JsonObject> await(String rid, String type) {
    Pending p = new Pending();
    map.put(rid, p);
    p.timer =
        core.schedule(
            () -> {
              if (map.remove(rid) == p) {
                p.future.completeExceptionally(
                    new NixMsgException(
                        "timeout", "No response to " + type + " within " + timeoutMs + " ms"));
              }
            },
            timeoutMs,
            TimeUnit.MILLISECONDS);
    return p.future;
  }

  /** Applies a resp; false when {@code rid} is not waited for. */
  boolean settle(String rid, boolean ok, JsonObject data, NixMsgException error) {
    Pending p = map.remove(rid);
    if (p == null) return false;
    p.timer.cancel(false);
    if (ok) p.future.complete(data != null ? data : new JsonObject());
    else {
      p.future.completeExceptionally(
          error != null ? error : new NixMsgException("bad_response", "Request failed"));
    }
    return true;
  }

  /** The requests waiting for their resp. */
  List<CompletableFuture<JsonObject>> futures() {
    List<CompletableFuture<JsonObject>> out = new ArrayList<>();
    for (Pending p : map.values()) out.add(p.future);
    return out;
  }

  /** Fails every waiting request with {@code error} (the connection is gone). */
  void failAll(NixMsgException error) {
    List<Pending> all = new ArrayList<>(map.values());
    map.clear();
    for (Pending p : all) {
      p.timer.cancel(false);
      p.future.completeExceptionally(error);
    }
  }
}
