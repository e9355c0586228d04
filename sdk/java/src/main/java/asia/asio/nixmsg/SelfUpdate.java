package asia.asio.nixmsg;

/** Fields {@code updateSelf} can change; unset fields stay as they are. */
public final class SelfUpdate {
  final String name;
  final Long defaultDelayMs;

  private SelfUpdate(String name, Long defaultDelayMs) {
    this.name = name;
    this.defaultDelayMs = defaultDelayMs;
  }

  /** Nothing changed yet. */
  public static SelfUpdate create() {
    return new SelfUpdate(null, null);
  }

  /** A copy with the display name set. */
  public SelfUpdate name(String name) {
    return new SelfUpdate(name, defaultDelayMs);
  }

  /** A copy with the default delay of this endpoint's sends set. */
  public SelfUpdate defaultDelayMs(long ms) {
    return new SelfUpdate(name, ms);
  }
}
