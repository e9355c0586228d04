package asia.asio.nixmsg;

import java.util.Objects;

/** The server's answer to {@code send} (spec 6.2). */
public final class SendResult {
  private final String id;
  private final long sendAtMs;
  private final String state;

  SendResult(String id, long sendAtMs, String state) {
    this.id = id;
    this.sendAtMs = sendAtMs;
    this.state = state;
  }

  /** The message id (36 characters). */
  public String id() {
    return id;
  }

  /** When the message is (or was) due, server time. */
  public long sendAtMs() {
    return sendAtMs;
  }

  /** {@code scheduled}, {@code dispatched} or {@code completed}. */
  public String state() {
    return state;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof SendResult)) return false;
    SendResult x = (SendResult) o;
    return Objects.equals(id, x.id)
        && sendAtMs == x.sendAtMs
        && Objects.equals(state, x.state);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, sendAtMs, state);
  }

  @Override
  public String toString() {
    return "SendResult{" + "id=" + id + ", " + "sendAtMs=" + sendAtMs + ", " + "state=" + state + "}";
  }
}
