package asia.asio.nixmsg;

import java.util.Objects;

/** A group change (spec 6.7). */
public final class GroupEvent {
  private final String groupId;
  private final String event;
  private final String endpointId;
  private final long atMs;

  GroupEvent(String groupId, String event, String endpointId, long atMs) {
    this.groupId = groupId;
    this.event = event;
    this.endpointId = endpointId;
    this.atMs = atMs;
  }

  /** The group. */
  public String groupId() {
    return groupId;
  }

  /** {@code member_added}, {@code member_removed}, {@code left}, {@code owner_changed}, {@code renamed} or {@code dissolved}. */
  public String event() {
    return event;
  }

  /** The member concerned. */
  public String endpointId() {
    return endpointId;
  }

  /** When, server time. */
  public long atMs() {
    return atMs;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupEvent)) return false;
    GroupEvent x = (GroupEvent) o;
    return Objects.equals(groupId, x.groupId)
        && Objects.equals(event, x.event)
        && Objects.equals(endpointId, x.endpointId)
        && atMs == x.atMs;
  }

  @Override
  public int hashCode() {
    return Objects.hash(groupId, event, endpointId, atMs);
  }

  @Override
  public String toString() {
    return "GroupEvent{" + "groupId=" + groupId + ", " + "event=" + event + ", " + "endpointId=" + endpointId + ", " + "atMs=" + atMs + "}";
  }
}
