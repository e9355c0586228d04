package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code status} (spec 6.4): the message and one page of recipients. */
public final class StatusResult {
  private final String id;
  private final String state;
  private final String reason;
  private final long sendAtMs;
  private final java.util.Map<String, Long> counts;
  private final java.util.List<DeliveryStatus> items;
  private final String nextCursor;

  StatusResult(String id, String state, String reason, long sendAtMs, java.util.Map<String, Long> counts, java.util.List<DeliveryStatus> items, String nextCursor) {
    this.id = id;
    this.state = state;
    this.reason = reason;
    this.sendAtMs = sendAtMs;
    this.counts = java.util.Collections.unmodifiableMap(counts);
    this.items = java.util.Collections.unmodifiableList(items);
    this.nextCursor = nextCursor;
  }

  /** The message id. */
  public String id() {
    return id;
  }

  /** {@code scheduled}, {@code dispatched} or {@code completed}. */
  public String state() {
    return state;
  }

  /** Why the message ended before dispatch ("" when dispatched normally). */
  public String reason() {
    return reason;
  }

  /** When it is due, server time. */
  public long sendAtMs() {
    return sendAtMs;
  }

  /** Deliveries per state. */
  public java.util.Map<String, Long> counts() {
    return counts;
  }

  /** This page of recipients. */
  public java.util.List<DeliveryStatus> items() {
    return items;
  }

  /** Pass to {@code status} for the next page; "" when this was the last. */
  public String nextCursor() {
    return nextCursor;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof StatusResult)) return false;
    StatusResult x = (StatusResult) o;
    return Objects.equals(id, x.id)
        && Objects.equals(state, x.state)
        && Objects.equals(reason, x.reason)
        && sendAtMs == x.sendAtMs
        && Objects.equals(counts, x.counts)
        && Objects.equals(items, x.items)
        && Objects.equals(nextCursor, x.nextCursor);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, state, reason, sendAtMs, counts, items, nextCursor);
  }

  @Override
  public String toString() {
    return "StatusResult{" + "id=" + id + ", " + "state=" + state + ", " + "reason=" + reason + ", " + "sendAtMs=" + sendAtMs + ", " + "counts=" + counts + ", " + "items=" + items + ", " + "nextCursor=" + nextCursor + "}";
  }
}
