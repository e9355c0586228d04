/** Error codes the server returns in `resp` and in the HTTP registration API (spec 6.10). */
const SERVER_CODES = {
  BadRequest: "bad_request",
  NotReady: "not_ready",
  Unauthorized: "unauthorized",
  Forbidden: "forbidden",
  NotFound: "not_found",
  InvalidTarget: "invalid_target",
  Conflict: "conflict",
  IdTaken: "id_taken",
  BodyTooLarge: "body_too_large",
  MetaTooLarge: "meta_too_large",
  FrameTooLarge: "frame_too_large",
  ResponseTooLarge: "response_too_large",
  TalkPasswordRequired: "talk_password_required",
  TalkPasswordInvalid: "talk_password_invalid",
  RateLimited: "rate_limited",
  NotMember: "not_member",
  OwnerCannotLeave: "owner_cannot_leave",
  GroupFull: "group_full",
  QuotaExceeded: "quota_exceeded",
  EndpointDisabled: "endpoint_disabled",
  RegistrationClosed: "registration_closed",
  RegistrationCodeInvalid: "registration_code_invalid",
  Busy: "busy",
} as const;

/**
 * Error codes produced by the SDK itself:
 * - `not_connected`: the call needs a completed handshake (spec 9), or the connection was lost
 *   before the response arrived.
 * - `queue_full`: the in-memory send queue already holds its capacity (default 1,000).
 * - `timeout`: no response within `requestTimeoutMs`, or `ready({ timeoutMs })` ran out (its
 *   `cause` is the last connection error, if any).
 * - `closed`: the client was closed or logged out; pending sends end with it.
 * - `kicked`: another login took the endpoint over (`reason: "taken_over"`), or the server sent
 *   `fatal` (`reason` is its reason); pending sends end with it.
 * - `auth_failed`: the server refused the credential (`reason` is `session_invalid` or
 *   `bad_credentials`); pending sends end with it.
 * - `network`: a connection attempt or an HTTP request (registration) failed; `cause` is the
 *   platform's error.
 * - `tls`: a connection attempt failed in TLS (an untrusted or expired certificate, a wrong
 *   host name); `cause` is the platform's error.
 * - `bad_response`: the server answered something that is not a NixMsg response.
 *
 * Invalid arguments and options (a bad URL, a negative delay, a missing callback) fail with the
 * server's `bad_request`, before anything is sent.
 */
const LOCAL_CODES = {
  NotConnected: "not_connected",
  QueueFull: "queue_full",
  Timeout: "timeout",
  Closed: "closed",
  Kicked: "kicked",
  AuthFailed: "auth_failed",
  Network: "network",
  Tls: "tls",
  BadResponse: "bad_response",
} as const;

/**
 * Every error code as a constant, to branch on without string literals: the server's
 * (spec 6.10) and the SDK's own.
 *
 * @example
 * ```ts
 * if (err instanceof NixMsgError && err.code === ErrorCode.TalkPasswordRequired) { … }
 * ```
 */
export const ErrorCode = Object.freeze({ ...SERVER_CODES, ...LOCAL_CODES });

/** A code of spec 6.10. */
export type ServerErrorCode = (typeof SERVER_CODES)[keyof typeof SERVER_CODES];

/** A code the SDK produces itself. */
export type LocalErrorCode = (typeof LOCAL_CODES)[keyof typeof LOCAL_CODES];

/** Every code a {@link NixMsgError} can carry; unknown server codes pass through as strings. */
// deno-lint-ignore ban-types
export type ErrorCode = ServerErrorCode | LocalErrorCode | (string & {});

/** Extra facts an error may carry. */
export interface NixMsgErrorOptions {
  /** `error.data` of the server response, when it had one. */
  readonly data?: Record<string, unknown>;
  /** HTTP status, for errors of the registration API. */
  readonly status?: number;
  /** Why the client stopped, for `kicked` and `auth_failed`. */
  readonly reason?: string;
  /** The underlying error (`network`, `tls`, `timeout` of `ready`, a platform error). */
  readonly cause?: unknown;
}

/**
 * The one error type of the SDK. Branch on `code` (spec 6: the message is for developers).
 *
 * @example
 * ```ts
 * try {
 *   await client.send("door-1", "open");
 * } catch (err) {
 *   if (err instanceof NixMsgError && err.code === "talk_password_required") {
 *     await client.unlock("door-1", prompt("Talk password") ?? "");
 *   }
 * }
 * ```
 */
export class NixMsgError extends Error {
  /** The spec 6.10 code, or one of the SDK's own codes ({@link LocalErrorCode}). */
  readonly code: ErrorCode;
  /** `error.data` of the server response, when present. */
  readonly data?: Record<string, unknown>;
  /** HTTP status of a registration error. */
  readonly status?: number;
  /** Why the client stopped, for `kicked` and `auth_failed`. */
  readonly reason?: string;

  constructor(code: ErrorCode, message?: string, options: NixMsgErrorOptions = {}) {
    super(message ?? code, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "NixMsgError";
    this.code = code;
    if (options.data !== undefined) this.data = options.data;
    if (options.status !== undefined) this.status = options.status;
    if (options.reason !== undefined) this.reason = options.reason;
  }
}

/** Platform error codes of a failed TLS handshake (Node, Deno), as a prefix or a whole code. */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

/**
 * The error a failed connection attempt is reported with: `tls` for a TLS handshake failure,
 * `network` otherwise, with the platform's error as `cause`.
 */
export function transportError(err: unknown): NixMsgError {
  if (err instanceof NixMsgError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const tls = (typeof code === "string" && TLS_CODE.test(code)) ||
    /certificate|\bSSL\b|\bTLS\b/i.test(message);
  return new NixMsgError(
    tls ? "tls" : "network",
    `Connection failed: ${message}`,
    { cause: err },
  );
}
