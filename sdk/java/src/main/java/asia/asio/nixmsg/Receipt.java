package asia.asio.nixmsg;

import java.util.Objects;

/** A receipt: what happened to a sent message at one recipient (spec 6.4). */
public final class Receipt {
  private final String receiptId;
  private final String id;
  private final String endpointId;
  private final String state;
  private final String reason;
  private final long atMs;

  Receipt(String receiptId, String id, String endpointId, String state, String reason, long atMs) {
    this.receiptId = receiptId;
    this.id = id;
    this.endpointId = endpointId;
    this.state = state;
    this.reason = reason;
    this.atMs = atMs;
  }

  /** Receipt id, for deduplication. */
  public String receiptId() {
    return receiptId;
  }

  /** The message id. */
  public String id() {
    return id;
  }

  /** The recipient; "" for a message-level rejection. */
  public String endpointId() {
    return endpointId;
  }

  /** {@code accepted}, {@code expired}, {@code dropped} or {@code rejected}. */
  public String state() {
    return state;
  }

  /** Why, when not accepted. */
  public String reason() {
    return reason;
  }

  /** When, server time. */
  public long atMs() {
    return atMs;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof Receipt)) return false;
    Receipt x = (Receipt) o;
    return Objects.equals(receiptId, x.receiptId)
        && Objects.equals(id, x.id)
        && Objects.equals(endpointId, x.endpointId)
        && Objects.equals(state, x.state)
        && Objects.equals(reason, x.reason)
        && atMs == x.atMs;
  }

  @Override
  public int hashCode() {
    return Objects.hash(receiptId, id, endpointId, state, reason, atMs);
  }

  @Override
  public String toString() {
    return "Receipt{" + "receiptId=" + receiptId + ", " + "id=" + id + ", " + "endpointId=" + endpointId + ", " + "state=" + state + ", " + "reason=" + reason + ", " + "atMs=" + atMs + "}";
  }
}
