package asia.asio.nixmsg;

/** Options of {@link NixMsgClient#register} (spec 6.9); build with {@link #builder()}. */
public final class RegisterOptions {
  final String id;
  final String loginPassword;
  final String name;
  final String talkPassword;
  final int timeoutMs;

  private RegisterOptions(Builder b) {
    id = b.id;
    loginPassword = b.loginPassword;
    name = b.name;
    talkPassword = b.talkPassword;
    timeoutMs = b.timeoutMs;
  }

  public static RegisterOptions none() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link RegisterOptions}. */
  public static final class Builder {
    private String id = "";
    private String loginPassword = "";
    private String name = "";
    private String talkPassword = "";
    private int timeoutMs = 30_000;

    private Builder() {}

    /** The endpoint id; empty lets the server choose one ({@code e_...}). */
    public Builder id(String id) {
      this.id = id == null ? "" : id;
      return this;
    }

    /** The login password; empty lets the server generate one (returned once). */
    public Builder loginPassword(String password) {
      this.loginPassword = password == null ? "" : password;
      return this;
    }

    public Builder name(String name) {
      this.name = name == null ? "" : name;
      return this;
    }

    public Builder talkPassword(String talkPassword) {
      this.talkPassword = talkPassword == null ? "" : talkPassword;
      return this;
    }

    /** Connect and read timeout of the HTTP request, in ms (default 30,000). */
    public Builder timeoutMs(int ms) {
      this.timeoutMs = ms;
      return this;
    }

    public RegisterOptions build() {
      return new RegisterOptions(this);
    }
  }
}
