package asia.asio.nixmsg;

import java.util.Collections;
import java.util.Map;

/**
 * The one error type of the SDK (spec 6.10, 9). Branch on {@link #code()}; the message is for
 * developers. Futures of the SDK fail with it: {@code join()} wraps it in a
 * {@code CompletionException}, {@code get()} in an {@code ExecutionException}; use
 * {@link #from(Throwable)} to get it back.
 *
 * <p>{@link ErrorCodes} has a constant for every code. Invalid options and arguments (an empty
 * endpoint id, an unparsable URL, a negative delay, a null callback) fail with {@code bad_request}
 * where they are given. The underlying error (an I/O or TLS failure) is {@link #getCause()}.
 *
 * <p>Server codes: {@code bad_request}, {@code unauthorized}, {@code talk_password_required},
 * {@code talk_password_invalid}, {@code body_too_large}, {@code rate_limited}, and the others of
 * spec 6.10; they pass through unchanged. Codes of the SDK itself:
 *
 * <ul>
 *   <li>{@code not_connected}: the call needs a completed handshake, or the connection was lost
 *       before the response arrived.
 *   <li>{@code queue_full}: the in-memory send queue already holds its capacity (default 1,000).
 *   <li>{@code timeout}: no response within the request timeout.
 *   <li>{@code closed}: the client was closed or logged out; pending sends end with it.
 *   <li>{@code kicked}: another login took the endpoint over ({@code reason} {@code taken_over})
 *       or the server sent {@code fatal} ({@code reason} is its reason).
 *   <li>{@code auth_failed}: the server refused the credential ({@code reason} is
 *       {@code session_invalid} or {@code bad_credentials}).
 *   <li>{@code network}: a connection attempt or an HTTP request (registration) failed;
 *       {@link #getCause()} is the I/O or TLS error.
 *   <li>{@code bad_response}: the server answered something that is not a NixMsg response.
 * </ul>
 *
 * <pre>{@code
 * try {
 *   client.send("door-1", "open").join();
 * } catch (CompletionException e) {
 *   NixMsgException err = NixMsgException.from(e);
 *   if (err != null && err.code().equals("talk_password_required")) { ... }
 * }
 * }</pre>
 */
public class NixMsgException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String code;
  private final String reason;
  private final int status;
  private final transient Map<String, Object> data;

  /** An error with a code and a message for developers. */
  public NixMsgException(String code, String message) {
    this(code, message, null, 0, null, null);
  }

  /** An error with a code, a message for developers and the underlying error. */
  public NixMsgException(String code, String message, Throwable cause) {
    this(code, message, null, 0, null, cause);
  }

  /** {@code bad_request} for an option or argument the SDK refuses before sending anything. */
  static NixMsgException config(String message) {
    return new NixMsgException(ErrorCodes.BAD_REQUEST, message);
  }

  NixMsgException(
      String code,
      String message,
      String reason,
      int status,
      Map<String, Object> data,
      Throwable cause) {
    super(message == null ? code : message, cause);
    this.code = code;
    this.reason = reason;
    this.status = status;
    this.data = data == null ? null : Collections.unmodifiableMap(data);
  }

  /** The spec 6.10 code, or one of the SDK's own codes. */
  public String code() {
    return code;
  }

  /** Why the client stopped, for {@code kicked} and {@code auth_failed}; else null. */
  public String reason() {
    return reason;
  }

  /** HTTP status of a registration error; 0 otherwise. */
  public int status() {
    return status;
  }

  /** {@code error.data} of the server response, when it had one; else null. */
  public Map<String, Object> data() {
    return data;
  }

  /**
   * The NixMsgException in {@code t} or its causes ({@code CompletionException},
   * {@code ExecutionException}), or null when there is none.
   */
  public static NixMsgException from(Throwable t) {
    for (int i = 0; t != null && i < 10; i++) {
      if (t instanceof NixMsgException) return (NixMsgException) t;
      t = t.getCause();
    }
    return null;
  }
}
