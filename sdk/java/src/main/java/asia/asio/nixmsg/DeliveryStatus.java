package asia.asio.nixmsg;

import java.util.Objects;

/** One recipient's line in a {@link StatusResult}. */
public final class DeliveryStatus {
  private final String endpointId;
  private final String state;
  private final String reason;

  DeliveryStatus(String endpointId, String state, String reason) {
    this.endpointId = endpointId;
    this.state = state;
    this.reason = reason;
  }

  /** The recipient. */
  public String endpointId() {
    return endpointId;
  }

  /** {@code pending}, {@code accepted}, {@code recalled}, {@code expired}, {@code dropped} or {@code rejected}. */
  public String state() {
    return state;
  }

  /** Why, for final states other than accepted. */
  public String reason() {
    return reason;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof DeliveryStatus)) return false;
    DeliveryStatus x = (DeliveryStatus) o;
    return Objects.equals(endpointId, x.endpointId)
        && Objects.equals(state, x.state)
        && Objects.equals(reason, x.reason);
  }

  @Override
  public int hashCode() {
    return Objects.hash(endpointId, state, reason);
  }

  @Override
  public String toString() {
    return "DeliveryStatus{" + "endpointId=" + endpointId + ", " + "state=" + state + ", " + "reason=" + reason + "}";
  }
}
