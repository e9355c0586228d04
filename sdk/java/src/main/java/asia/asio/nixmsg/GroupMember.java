package asia.asio.nixmsg;

import java.util.Objects;

/** A member in {@code groups().get()}. */
public final class GroupMember {
  private final String id;
  private final String name;
  private final boolean online;

  GroupMember(String id, String name, boolean online) {
    this.id = id;
    this.name = name;
    this.online = online;
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

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupMember)) return false;
    GroupMember x = (GroupMember) o;
    return Objects.equals(id, x.id)
        && Objects.equals(name, x.name)
        && online == x.online;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, online);
  }

  @Override
  public String toString() {
    return "GroupMember{" + "id=" + id + ", " + "name=" + name + ", " + "online=" + online + "}";
  }
}
