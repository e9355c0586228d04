package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code getSelf} (spec 6.6). */
public final class SelfInfo {
  private final String id;
  private final String name;
  private final String source;
  private final long defaultDelayMs;
  private final boolean talkPasswordSet;
  private final long createdAtMs;

  SelfInfo(String id, String name, String source, long defaultDelayMs, boolean talkPasswordSet, long createdAtMs) {
    this.id = id;
    this.name = name;
    this.source = source;
    this.defaultDelayMs = defaultDelayMs;
    this.talkPasswordSet = talkPasswordSet;
    this.createdAtMs = createdAtMs;
  }

  /** The endpoint id. */
  public String id() {
    return id;
  }

  /** Display name. */
  public String name() {
    return name;
  }

  /** How it was created: {@code admin} or {@code self}. */
  public String source() {
    return source;
  }

  /** Default delay of its sends. */
  public long defaultDelayMs() {
    return defaultDelayMs;
  }

  /** True when it has a talk password. */
  public boolean talkPasswordSet() {
    return talkPasswordSet;
  }

  /** Creation time. */
  public long createdAtMs() {
    return createdAtMs;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof SelfInfo)) return false;
    SelfInfo x = (SelfInfo) o;
    return Objects.equals(id, x.id)
        && Objects.equals(name, x.name)
        && Objects.equals(source, x.source)
        && defaultDelayMs == x.defaultDelayMs
        && talkPasswordSet == x.talkPasswordSet
        && createdAtMs == x.createdAtMs;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, source, defaultDelayMs, talkPasswordSet, createdAtMs);
  }

  @Override
  public String toString() {
    return "SelfInfo{" + "id=" + id + ", " + "name=" + name + ", " + "source=" + source + ", " + "defaultDelayMs=" + defaultDelayMs + ", " + "talkPasswordSet=" + talkPasswordSet + ", " + "createdAtMs=" + createdAtMs + "}";
  }
}
