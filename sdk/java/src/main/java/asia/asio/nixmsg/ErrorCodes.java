package asia.asio.nixmsg;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Every code a {@link NixMsgException} can carry: the server's (spec 6.10) and the SDK's own.
 * Branch on these constants rather than on string literals.
 *
 * <pre>{@code
 * NixMsgException err = NixMsgException.from(e);
 * if (err != null && err.code().equals(ErrorCodes.TALK_PASSWORD_REQUIRED)) { ... }
 * }</pre>
 */
public final class ErrorCodes {
  private ErrorCodes() {}

  // ---- the server's codes (spec 6.10) ----
  /** A field is invalid; also an option or argument the SDK refuses locally. */
  public static final String BAD_REQUEST = "bad_request";
  /** The request came before the handshake. */
  public static final String NOT_READY = "not_ready";
  /** An identity check failed (a wrong old password, for one). */
  public static final String UNAUTHORIZED = "unauthorized";
  /** Not allowed (not the group owner, for one). */
  public static final String FORBIDDEN = "forbidden";
  /** The message, group or queried id does not exist. */
  public static final String NOT_FOUND = "not_found";
  /** The send target does not exist. */
  public static final String INVALID_TARGET = "invalid_target";
  /** The same message id with different content. */
  public static final String CONFLICT = "conflict";
  /** The id exists already (registration, provisioning, group creation). */
  public static final String ID_TAKEN = "id_taken";
  /** The body is over {@code max_body_bytes} (also checked locally). */
  public static final String BODY_TOO_LARGE = "body_too_large";
  /** {@code meta} is over {@code max_meta_bytes} (also checked locally). */
  public static final String META_TOO_LARGE = "meta_too_large";
  /** The frame is over {@code max_frame_bytes}; produced by the SDK only. */
  public static final String FRAME_TOO_LARGE = "frame_too_large";
  /** The response is over this connection's receive limit: ask for a smaller page. */
  public static final String RESPONSE_TOO_LARGE = "response_too_large";
  /** The recipient needs a talk password. */
  public static final String TALK_PASSWORD_REQUIRED = "talk_password_required";
  /** The talk password is wrong. */
  public static final String TALK_PASSWORD_INVALID = "talk_password_invalid";
  /** Too many requests, or locked for a while after wrong passwords. */
  public static final String RATE_LIMITED = "rate_limited";
  /** Not a member of the group. */
  public static final String NOT_MEMBER = "not_member";
  /** The group owner cannot leave. */
  public static final String OWNER_CANNOT_LEAVE = "owner_cannot_leave";
  /** The group has its maximum of members. */
  public static final String GROUP_FULL = "group_full";
  /** This endpoint has {@code max_pending_per_sender} unfinished messages. */
  public static final String QUOTA_EXCEEDED = "quota_exceeded";
  /** The recipient is disabled. */
  public static final String ENDPOINT_DISABLED = "endpoint_disabled";
  /** Registration is off (registration API only). */
  public static final String REGISTRATION_CLOSED = "registration_closed";
  /** Wrong registration code (registration API only). */
  public static final String REGISTRATION_CODE_INVALID = "registration_code_invalid";
  /** The server is overloaded; retry later. */
  public static final String BUSY = "busy";

  // ---- the SDK's own codes ----
  /** The call needs a completed handshake, or the connection was lost before the response. */
  public static final String NOT_CONNECTED = "not_connected";
  /** The in-memory send queue is full. */
  public static final String QUEUE_FULL = "queue_full";
  /** No answer within the bound (a request timeout, or {@code ready(timeout)}); the cause is the last connection error, if any. */
  public static final String TIMEOUT = "timeout";
  /** The client was closed or logged out. */
  public static final String CLOSED = "closed";
  /** Taken over by another login, or a {@code fatal} from the server ({@code reason()} says which). */
  public static final String KICKED = "kicked";
  /** The server refused the credential ({@code reason()}: {@code bad_credentials} or {@code session_invalid}). */
  public static final String AUTH_FAILED = "auth_failed";
  /** A connection or HTTP request failed; {@code getCause()} is the I/O or TLS error. */
  public static final String NETWORK = "network";
  /** The server answered something that is not a NixMsg response. */
  public static final String BAD_RESPONSE = "bad_response";

  /** The codes of spec 6.10. */
  public static final Set<String> SERVER_CODES =
      set(
          BAD_REQUEST, NOT_READY, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, INVALID_TARGET, CONFLICT,
          ID_TAKEN, BODY_TOO_LARGE, META_TOO_LARGE, FRAME_TOO_LARGE, RESPONSE_TOO_LARGE,
          TALK_PASSWORD_REQUIRED, TALK_PASSWORD_INVALID, RATE_LIMITED, NOT_MEMBER,
          OWNER_CANNOT_LEAVE, GROUP_FULL, QUOTA_EXCEEDED, ENDPOINT_DISABLED, REGISTRATION_CLOSED,
          REGISTRATION_CODE_INVALID, BUSY);

  /** The codes the SDK produces itself. */
  public static final Set<String> SDK_CODES =
      set(
          NOT_CONNECTED, QUEUE_FULL, TIMEOUT, CLOSED, KICKED, AUTH_FAILED, NETWORK, BAD_RESPONSE);

  private static Set<String> set(String... codes) {
    return Collections.unmodifiableSet(new LinkedHashSet<>(Arrays.asList(codes)));
  }
}
