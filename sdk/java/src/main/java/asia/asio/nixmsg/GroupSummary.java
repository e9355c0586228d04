package asia.asio.nixmsg;

import java.util.Objects;

/** A group in {@code groups().list()}. */
public final class GroupSummary {
  private final String id;
  private final String name;
  private final String ownerId;
  private final long memberCount;

  GroupSummary(String id, String name, String ownerId, long memberCount) {
    this.id = id;
    this.name = name;
    this.ownerId = ownerId;
    this.memberCount = memberCount;
  }

  /** The group id. */
  public String id() {
    return id;
  }

  /** Its name. */
  public String name() {
    return name;
  }

  /** The owner. */
  public String ownerId() {
    return ownerId;
  }

  /** Number of members. */
  public long memberCount() {
    return memberCount;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupSummary)) return false;
    GroupSummary x = (GroupSummary) o;
    return Objects.equals(id, x.id)
        && Objects.equals(name, x.name)
        && Objects.equals(ownerId, x.ownerId)
        && memberCount == x.memberCount;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, ownerId, memberCount);
  }

  @Override
  public String toString() {
    return "GroupSummary{" + "id=" + id + ", " + "name=" + name + ", " + "ownerId=" + ownerId + ", " + "memberCount=" + memberCount + "}";
  }
}
