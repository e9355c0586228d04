package asia.asio.nixmsg;

import java.util.Objects;

/** One entry of {@code presence} (spec 6.5). */
public final class PresenceInfo {
  private final String id;
  private final boolean online;
  private final Long sinceMs;
  private final boolean notFound;

  PresenceInfo(String id, boolean online, Long sinceMs, boolean notFound) {
    this.id = id;
    this.online = online;
    this.sinceMs = sinceMs;
    this.notFound = notFound;
  }

  /** The endpoint. */
  public String id() {
    return id;
  }

  /** Online now. */
  public boolean online() {
    return online;
  }

  /** Since when, or null. */
  public Long sinceMs() {
    return sinceMs;
  }

  /** True when the id is unknown. */
  public boolean notFound() {
    return notFound;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof PresenceInfo)) return false;
    PresenceInfo x = (PresenceInfo) o;
    return Objects.equals(id, x.id)
        && online == x.online
        && Objects.equals(sinceMs, x.sinceMs)
        && notFound == x.notFound;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, online, sinceMs, notFound);
  }

  @Override
  public String toString() {
    return "PresenceInfo{" + "id=" + id + ", " + "online=" + online + ", " + "sinceMs=" + sinceMs + ", " + "notFound=" + notFound + "}";
  }
}
