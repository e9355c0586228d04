/**
 * Downlink serialization (spec 6): compact UTF-8 JSON that never escapes non-ASCII or HTML
 * characters, so Chinese, emoji and `<>&` cost their UTF-8 size and nothing more. The one error
 * renderer, `errorBody`, lives here too (STYLE 4).
 */
import { type ErrorCode, errorInfo, ProtocolError, toProtocolError } from "./errors.ts";
import type { ErrorBody, RespErrFrame, RespFrame, RespOkFrame } from "./frames.ts";
import { utf8Length } from "./text.ts";

const encoder = new TextEncoder();

/**
 * Encodes a frame as UTF-8 JSON. `JSON.stringify` escapes only `"`, `\`, control characters
 * and lone surrogates, which is what spec 6 asks for.
 *
 * @example
 * ```ts
 * encodeFrame({ v: 1, type: "fatal", reason: "disabled" });
 * ```
 */
export function encodeFrame(frame: object): Uint8Array {
  return encoder.encode(JSON.stringify(frame));
}

/** Returns the size in bytes that `encodeFrame(frame)` would have, without allocating it. */
export function frameSize(frame: object): number {
  return utf8Length(JSON.stringify(frame));
}

/**
 * Renders the `error` object of a failed response (spec 6, 6.9): the catalogue message unless
 * `message` is given or `error` is a `ProtocolError` carrying its own. This is the only place
 * errors are rendered.
 */
export function errorBody(error: ErrorCode | ProtocolError, message?: string): ErrorBody {
  const code = typeof error === "string" ? error : error.code;
  const text = message ?? (typeof error === "string" ? errorInfo(code).message : error.message);
  const data = typeof error === "string" ? undefined : error.data;
  return data === undefined ? { code, message: text } : { code, message: text, data };
}

/**
 * A successful `resp` (spec 6).
 *
 * @example
 * ```ts
 * okResp("2", { id: "m1", send_at_ms: 1750000010000, state: "scheduled" });
 * ```
 */
export function okResp<D>(rid: string, data: D): RespOkFrame<D> {
  return { v: 1, type: "resp", rid, ok: true, data };
}

/**
 * A failed `resp` (spec 6).
 *
 * @example
 * ```ts
 * errResp("1", "talk_password_required");
 * // {"v":1,"type":"resp","rid":"1","ok":false,"error":{"code":"talk_password_required","message":"需要对话密码"}}
 * errResp("5", new ProtocolError("bad_request", "字段不合法：limit 必须是 1–200 的整数"));
 * ```
 */
export function errResp(
  rid: string,
  error: ErrorCode | ProtocolError,
  message?: string,
): RespErrFrame {
  return { v: 1, type: "resp", rid, ok: false, error: errorBody(error, message) };
}

/**
 * Encodes a `resp` for a connection that accepts at most `maxBytes` per frame (spec 6.1, 7.5).
 * A response that does not fit is replaced by a `response_too_large` error for the same `rid`.
 * `maxBytes` null means no limit.
 */
export function encodeResp(frame: RespFrame, maxBytes: number | null): Uint8Array {
  const bytes = encodeFrame(frame);
  if (maxBytes === null || bytes.length <= maxBytes) return bytes;
  return encodeFrame(errResp(frame.rid, "response_too_large"));
}

/** The HTTP form of an error (spec 6.9): status and `{"ok":false,"error":{...}}`. */
export interface HttpError {
  readonly status: number;
  readonly body: { readonly ok: false; readonly error: ErrorBody };
}

/**
 * Renders anything caught by an HTTP handler: a `ProtocolError` keeps its code and catalogue
 * status, anything else becomes `busy` (503) with no internal detail.
 *
 * @example
 * ```ts
 * const { status, body } = httpError(new ProtocolError("registration_closed"));
 * // status 403, body {"ok":false,"error":{"code":"registration_closed","message":"注册未开启"}}
 * ```
 */
export function httpError(error: unknown): HttpError {
  const e = toProtocolError(error);
  return { status: errorInfo(e.code).status, body: { ok: false, error: errorBody(e) } };
}
