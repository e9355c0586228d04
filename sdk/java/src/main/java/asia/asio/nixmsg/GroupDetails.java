package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code groups().get()}: the group and one page of members. */
public final class GroupDetails {
  private final String id;
  private final String name;
  private final String ownerId;
  private final long memberCount;
  private final Page<GroupMember> members;

  GroupDetails(String id, String name, String ownerId, long memberCount, Page<GroupMember> members) {
    this.id = id;
    this.name = name;
    this.ownerId = ownerId;
    this.memberCount = memberCount;
    this.members = members;
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

  /** This page of members. */
  public Page<GroupMember> members() {
    return members;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupDetails)) return false;
    GroupDetails x = (GroupDetails) o;
    return Objects.equals(id, x.id)
        && Objects.equals(name, x.name)
        && Objects.equals(ownerId, x.ownerId)
        && memberCount == x.memberCount
        && Objects.equals(members, x.members);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, ownerId, memberCount, members);
  }

  @Override
  public String toString() {
    return "GroupDetails{" + "id=" + id + ", " + "name=" + name + ", " + "ownerId=" + ownerId + ", " + "memberCount=" + memberCount + ", " + "members=" + members + "}";
  }
}
