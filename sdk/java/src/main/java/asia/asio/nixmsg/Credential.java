package asia.asio.nixmsg;

import java.util.Objects;

/**
 * How to log in: the login password, or a session token saved from {@code onSession} (spec 5,
 * 9). The SDK never stores either on disk.
 */
public final class Credential {
  private final String password;
  private final String sessionToken;

  private Credential(String password, String sessionToken) {
    this.password = password;
    this.sessionToken = sessionToken;
  }

  /** Log in with the login password; the server then issues a session token. */
  public static Credential password(String password) {
    return new Credential(Objects.requireNonNull(password, "password"), null);
  }

  /** Log in with a session token saved from an earlier {@code onSession} call. */
  public static Credential sessionToken(String token) {
    return new Credential(null, Objects.requireNonNull(token, "token"));
  }

  String passwordValue() {
    return password;
  }

  String tokenValue() {
    return sessionToken;
  }

  @Override
  public String toString() {
    return password != null ? "Credential{password=***}" : "Credential{sessionToken=***}";
  }
}
