package asia.asio.nixmsg;

import java.util.Iterator;
import java.util.LinkedHashMap;

/**
 * A bounded record of what happened to each received item (spec 9 "接收"): insertion ordered,
 * the oldest record is dropped when the capacity (default 10,000) is exceeded. Not thread safe.
 *
 * <pre>{@code
 * DedupCache<String> seen = new DedupCache<>(10_000);
 * seen.set(DedupCache.messageKey("app-1", id), "delivered");
 * }</pre>
 */
final class DedupCache<S> {
  private final int capacity;
  private final LinkedHashMap<String, S> map = new LinkedHashMap<>();

  DedupCache(int capacity) {
    if (capacity < 1) throw NixMsgException.config("Dedup capacity must be at least 1");
    this.capacity = capacity;
  }

  int size() {
    return map.size();
  }

  S get(String key) {
    return map.get(key);
  }

  /** Records {@code state} for {@code key}; a new key may push out the oldest record. */
  void set(String key, S state) {
    // LinkedHashMap keeps the first insertion position when a key is replaced, like a JS Map.
    map.put(key, state);
    Iterator<String> it = map.keySet().iterator();
    while (map.size() > capacity && it.hasNext()) {
      it.next();
      it.remove();
    }
  }

  /** Forgets {@code key}, so that the next arrival is processed again. */
  void delete(String key) {
    map.remove(key);
  }

  /** The dedup key of a message: sender and message id (spec 9). */
  static String messageKey(String from, String id) {
    return from + "\u0000" + id;
  }
}
