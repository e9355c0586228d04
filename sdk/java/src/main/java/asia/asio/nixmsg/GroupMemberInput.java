package asia.asio.nixmsg;

/** A member to add to a group, with that member's talk password when it has one. */
public final class GroupMemberInput {
  private final String id;
  private final String talkPassword;

  private GroupMemberInput(String id, String talkPassword) {
    this.id = id;
    this.talkPassword = talkPassword == null ? "" : talkPassword;
  }

  public static GroupMemberInput of(String id) {
    return new GroupMemberInput(id, "");
  }

  public static GroupMemberInput of(String id, String talkPassword) {
    return new GroupMemberInput(id, talkPassword);
  }

  public String id() {
    return id;
  }

  String talkPassword() {
    return talkPassword;
  }
}
