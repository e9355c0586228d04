package asia.asio.nixmsg;

import java.util.Objects;

/** One entry of {@code directory} (spec 6.5). */
public final class DirectoryEntry {
  private final String id;
  private final String name;
  private final boolean online;
  private final Long onlineSinceMs;
  private final Long offlineSinceMs;
  private final boolean talkPasswordSet;

  DirectoryEntry(String id, String name, boolean online, Long onlineSinceMs, Long offlineSinceMs, boolean talkPasswordSet) {
    this.id = id;
    this.name = name;
    this.online = online;
    this.onlineSinceMs = onlineSinceMs;
    this.offlineSinceMs = offlineSinceMs;
    this.talkPasswordSet = talkPasswordSet;
  }

  /** The endpoint. */
  public String id() {
    return id;
  }

  /** Display name. */
  public String name() {
    return name;
  }

  /** Online now. */
  public boolean online() {
    return online;
  }

  /** Online since, or null. */
  public Long onlineSinceMs() {
    return onlineSinceMs;
  }

  /** Offline since, or null. */
  public Long offlineSinceMs() {
    return offlineSinceMs;
  }

  /** True when it has a talk password. */
  public boolean talkPasswordSet() {
    return talkPasswordSet;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof DirectoryEntry)) return false;
    DirectoryEntry x = (DirectoryEntry) o;
    return Objects.equals(id, x.id)
        && Objects.equals(name, x.name)
        && online == x.online
        && Objects.equals(onlineSinceMs, x.onlineSinceMs)
        && Objects.equals(offlineSinceMs, x.offlineSinceMs)
        && talkPasswordSet == x.talkPasswordSet;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, online, onlineSinceMs, offlineSinceMs, talkPasswordSet);
  }

  @Override
  public String toString() {
    return "DirectoryEntry{" + "id=" + id + ", " + "name=" + name + ", " + "online=" + online + ", " + "onlineSinceMs=" + onlineSinceMs + ", " + "offlineSinceMs=" + offlineSinceMs + ", " + "talkPasswordSet=" + talkPasswordSet + "}";
  }
}
