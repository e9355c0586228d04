package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code recall} (spec 6.4). */
public final class RecallResult {
  private final String result;
  private final long recalled;
  private final long accepted;
  private final long other;

  RecallResult(String result, long recalled, long accepted, long other) {
    this.result = result;
    this.recalled = recalled;
    this.accepted = accepted;
    this.other = other;
  }

  /** {@code recalled}, {@code partial} or {@code failed}. */
  public String result() {
    return result;
  }

  /** Deliveries recalled. */
  public long recalled() {
    return recalled;
  }

  /** Deliveries already accepted. */
  public long accepted() {
    return accepted;
  }

  /** Deliveries in another final state. */
  public long other() {
    return other;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof RecallResult)) return false;
    RecallResult x = (RecallResult) o;
    return Objects.equals(result, x.result)
        && recalled == x.recalled
        && accepted == x.accepted
        && other == x.other;
  }

  @Override
  public int hashCode() {
    return Objects.hash(result, recalled, accepted, other);
  }

  @Override
  public String toString() {
    return "RecallResult{" + "result=" + result + ", " + "recalled=" + recalled + ", " + "accepted=" + accepted + ", " + "other=" + other + "}";
  }
}
