package asia.asio.nixmsg;

/** States reported to {@code onConnection} (spec 9). */
public enum ConnectionState {
  CONNECTING("connecting"),
  ONLINE("online"),
  RECONNECTING("reconnecting"),
  /** Stopped by {@code close} ({@code closed}) or {@code logout}. */
  OFFLINE("offline"),
  /** Taken over by another login, or {@code fatal} from the server; no more reconnects. */
  KICKED("kicked"),
  /** The server refused the credential; no more reconnects. */
  AUTH_FAILED("auth_failed");

  private final String wire;

  ConnectionState(String wire) {
    this.wire = wire;
  }

  /** The spec's name: {@code connecting}, {@code online}, ... */
  public String wireName() {
    return wire;
  }
}
