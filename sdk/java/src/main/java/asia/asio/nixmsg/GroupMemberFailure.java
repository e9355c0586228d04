package asia.asio.nixmsg;

import java.util.Objects;

/** A member that could not be added, with the reason code (spec 6.7). */
public final class GroupMemberFailure {
  private final String id;
  private final String code;

  GroupMemberFailure(String id, String code) {
    this.id = id;
    this.code = code;
  }

  /** The endpoint. */
  public String id() {
    return id;
  }

  /** Why, a spec 6.10 code. */
  public String code() {
    return code;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof GroupMemberFailure)) return false;
    GroupMemberFailure x = (GroupMemberFailure) o;
    return Objects.equals(id, x.id)
        && Objects.equals(code, x.code);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, code);
  }

  @Override
  public String toString() {
    return "GroupMemberFailure{" + "id=" + id + ", " + "code=" + code + "}";
  }
}
