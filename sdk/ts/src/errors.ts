/** Error codes the server returns in `resp` and in the HTTP registration API (spec 6.10). */
export type ServerErrorCode =
  | "bad_request"
  | "not_ready"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "invalid_target"
  | "conflict"
  | "id_taken"
  | "body_too_large"
  | "meta_too_large"
  | "frame_too_large"
  | "response_too_large"
  | "talk_password_required"
  | "talk_password_invalid"
  | "rate_limited"
  | "not_member"
  | "owner_cannot_leave"
  | "group_full"
  | "quota_exceeded"
  | "endpoint_disabled"
  | "registration_closed"
  | "registration_code_invalid"
  | "busy";

/**
 * Error codes produced by the SDK itself:
 * - `not_connected`: the call needs a completed handshake (spec 9), or the connection was lost
 *   before the response arrived.
 * - `queue_full`: the in-memory send queue already holds its capacity (default 1,000).
 * - `timeout`: no response within `requestTimeoutMs`.
 * - `closed`: the client was closed or logged out; pending sends end with it.
 * - `kicked`: another login took the endpoint over (`reason: "taken_over"`), or the server sent
 *   `fatal` (`reason` is its reason); pending sends end with it.
 * - `auth_failed`: the server refused the credential (`reason` is `session_invalid` or
 *   `bad_credentials`); pending sends end with it.
 * - `network`: an HTTP request (registration) did not get a response.
 * - `bad_response`: the server answered something that is not a NixMsg response.
 */
export type LocalErrorCode =
  | "not_connected"
  | "queue_full"
  | "timeout"
  | "closed"
  | "kicked"
  | "auth_failed"
  | "network"
  | "bad_response";

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
  /** The underlying error, for `network`. */
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
