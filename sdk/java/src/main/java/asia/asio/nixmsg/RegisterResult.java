package asia.asio.nixmsg;

import java.util.Objects;

/** The answer to {@code register} (spec 6.9). */
public final class RegisterResult {
  private final String id;
  private final String loginPassword;

  RegisterResult(String id, String loginPassword) {
    this.id = id;
    this.loginPassword = loginPassword;
  }

  /** The new endpoint id. */
  public String id() {
    return id;
  }

  /** The generated password, only when the server generated it (else null); shown this once, never stored by the SDK. */
  public String loginPassword() {
    return loginPassword;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof RegisterResult)) return false;
    RegisterResult x = (RegisterResult) o;
    return Objects.equals(id, x.id)
        && Objects.equals(loginPassword, x.loginPassword);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, loginPassword);
  }

  @Override
  public String toString() {
    return "RegisterResult{id=" + id + ", loginPassword=" + (loginPassword == null ? "null" : "***") + "}";
  }
}
