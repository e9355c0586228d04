package asia.asio.nixmsg;

/** A connection state change. */
public final class ConnectionEvent {
  private final ConnectionState state;
  private final String reason;
  private final Long retryInMs;
  private final NixMsgException error;

  ConnectionEvent(ConnectionState state, String reason, Long retryInMs, NixMsgException error) {
    this.state = state;
    this.reason = reason;
    this.retryInMs = retryInMs;
    this.error = error;
  }

  public ConnectionState state() {
    return state;
  }

  /**
   * Why, or null: for {@code KICKED}, {@code taken_over} or the {@code fatal} reason
   * ({@code disabled}, {@code deleted}, {@code password_reset}, {@code protocol}); for
   * {@code AUTH_FAILED}, {@code session_invalid} or {@code bad_credentials}; for {@code OFFLINE},
   * {@code closed} or {@code logout}; for {@code RECONNECTING}, what ended the last attempt.
   */
  public String reason() {
    return reason;
  }

  /** For {@code RECONNECTING}: the delay before the next attempt, in ms; else null. */
  public Long retryInMs() {
    return retryInMs;
  }

  /** For {@code KICKED} and {@code AUTH_FAILED}: the error pending calls were failed with. */
  public NixMsgException error() {
    return error;
  }

  @Override
  public String toString() {
    return "ConnectionEvent{" + state.wireName() + (reason == null ? "" : ", " + reason) + "}";
  }
}
