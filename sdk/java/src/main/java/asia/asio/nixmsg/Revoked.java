package asia.asio.nixmsg;

import java.util.Objects;

/** A message handed to the application was withdrawn before it was acked (spec 6.4), or its {@code ack} found the delivery already final ({@code reason} is then that state, spec 9). */
public final class Revoked {
  private final String id;
  private final String from;
  private final String reason;

  Revoked(String id, String from, String reason) {
    this.id = id;
    this.from = from;
    this.reason = reason;
  }

  /** The message id. */
  public String id() {
    return id;
  }

  /** The sender. */
  public String from() {
    return from;
  }

  /** Why. */
  public String reason() {
    return reason;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof Revoked)) return false;
    Revoked x = (Revoked) o;
    return Objects.equals(id, x.id)
        && Objects.equals(from, x.from)
        && Objects.equals(reason, x.reason);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, from, reason);
  }

  @Override
  public String toString() {
    return "Revoked{" + "id=" + id + ", " + "from=" + from + ", " + "reason=" + reason + "}";
  }
}
