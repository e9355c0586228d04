package asia.asio.nixmsg;

import java.util.Objects;

/** An online or offline notice (spec 6.5). */
public final class PresenceEvent {
  private final String id;
  private final boolean online;
  private final long atMs;

  PresenceEvent(String id, boolean online, long atMs) {
    this.id = id;
    this.online = online;
    this.atMs = atMs;
  }

  /** The endpoint. */
  public String id() {
    return id;
  }

  /** Its new state. */
  public boolean online() {
    return online;
  }

  /** When, server time. */
  public long atMs() {
    return atMs;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof PresenceEvent)) return false;
    PresenceEvent x = (PresenceEvent) o;
    return Objects.equals(id, x.id)
        && online == x.online
        && atMs == x.atMs;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, online, atMs);
  }

  @Override
  public String toString() {
    return "PresenceEvent{" + "id=" + id + ", " + "online=" + online + ", " + "atMs=" + atMs + "}";
  }
}
