package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code createGroup} and {@code addMembers}. */
public final class GroupChange {
  private final String groupId;
  private final java.util.List<String> added;
  private final java.util.List<GroupMemberFailure> failed;

  GroupChange(String groupId, java.util.List<String> added, java.util.List<GroupMemberFailure> failed) {
    this.groupId = groupId;
    this.added = java.util.Collections.unmodifiableList(added);
    this.failed = java.util.Collections.unmodifiableList(failed);
  }

  /** The group. */
  public String groupId() {
    return groupId;
  }

  /** Members added by this call. */
  public java.util.List<String> added() {
    return added;
  }

  /** Members not added, with the reason code. */
  public java.util.List<GroupMemberFailure> failed() {
    return failed;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupChange)) return false;
    GroupChange x = (GroupChange) o;
    return Objects.equals(groupId, x.groupId)
        && Objects.equals(added, x.added)
        && Objects.equals(failed, x.failed);
  }

  @Override
  public int hashCode() {
    return Objects.hash(groupId, added, failed);
  }

  @Override
  public String toString() {
    return "GroupChange{" + "groupId=" + groupId + ", " + "added=" + added + ", " + "failed=" + failed + "}";
  }
}
