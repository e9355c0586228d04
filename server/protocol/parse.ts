/**
 * Request parsing (spec 6): bytes of one MQTT publish in, a validated request frame or a
 * `ProtocolError` out. Pure: no clock, no I/O. One parser per frame type, dispatched from one table.
 */
import { ProtocolError } from "./errors.ts";
import { badField, Fields, type FrameParser, isPlainObject } from "./fields.ts";
import type { RequestFrame, RequestType } from "./frames.ts";
import { MAX_RID_CHARS, type ProtocolLimits } from "./limits.ts";
import {
  parseAck,
  parseDirectoryList,
  parseEmpty,
  parseHello,
  parsePresenceGet,
  parsePresenceWatch,
  parseRecall,
  parseReceiptAck,
  parseSelfLoginPassword,
  parseSelfTalkPassword,
  parseSelfUpdate,
  parseStatus,
  parseUnlock,
} from "./parse_frames.ts";
import {
  parseGroupAdd,
  parseGroupCreate,
  parseGroupGet,
  parseGroupId,
  parseGroupList,
  parseGroupMember,
  parseGroupRename,
} from "./parse_group.ts";
import { parseSend } from "./parse_send.ts";
import { charCount } from "./text.ts";

export type { ProtocolLimits } from "./limits.ts";

/** The outcome of `parseRequest`. `rid` is null when the frame carries no usable `rid`. */
export type ParseResult =
  | { readonly ok: true; readonly frame: RequestFrame }
  | { readonly ok: false; readonly rid: string | null; readonly error: ProtocolError };

const PARSERS: { readonly [T in RequestType]: FrameParser<T> } = {
  "hello": parseHello,
  "send": parseSend,
  "ack": parseAck,
  "recall": parseRecall,
  "status": parseStatus,
  "receipt_ack": parseReceiptAck,
  "presence.get": parsePresenceGet,
  "directory.list": parseDirectoryList,
  "presence.watch": parsePresenceWatch,
  "unlock": parseUnlock,
  "self.get": parseEmpty,
  "self.update": parseSelfUpdate,
  "self.talk_password": parseSelfTalkPassword,
  "self.login_password": parseSelfLoginPassword,
  "self.logout": parseEmpty,
  "group.create": parseGroupCreate,
  "group.add": parseGroupAdd,
  "group.remove": parseGroupMember,
  "group.leave": parseGroupId,
  "group.transfer": parseGroupMember,
  "group.rename": parseGroupRename,
  "group.dissolve": parseGroupId,
  "group.list": parseGroupList,
  "group.get": parseGroupGet,
};

/** Every request type of spec 6, in the order of the spec. */
export const REQUEST_TYPES: readonly RequestType[] = Object.freeze(
  Object.keys(PARSERS) as RequestType[],
);

/** Returns true when `value` names a request type of spec 6. */
export function isRequestType(value: unknown): value is RequestType {
  return typeof value === "string" && Object.hasOwn(PARSERS, value);
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses and validates one request frame (spec 6). The payload must be a UTF-8 JSON object with
 * `v: 1`, a known `type` and a `rid` of 1–64 characters; every field is checked strictly and
 * unknown fields are ignored. Never throws for bad input: a failure carries the `ProtocolError`
 * and the `rid` when one could be read, so the caller can answer with `errResp(rid, error)`.
 *
 * @example
 * ```ts
 * const parsed = parseRequest(payload, config.limits);
 * if (!parsed.ok) {
 *   if (parsed.rid !== null) publish(encodeFrame(errResp(parsed.rid, parsed.error)));
 *   return;
 * }
 * if (parsed.frame.type === "send") handleSend(parsed.frame);
 * ```
 */
export function parseRequest(payload: Uint8Array, limits: ProtocolLimits): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(payload));
  } catch {
    return fail(null, new ProtocolError("bad_request", "字段不合法：帧不是 UTF-8 JSON"));
  }
  if (!isPlainObject(value)) {
    return fail(null, new ProtocolError("bad_request", "字段不合法：帧必须是 JSON 对象"));
  }
  const f = new Fields(value);
  const rid = readRid(f);
  try {
    if (f.raw("v") !== 1) throw badField("v", "必须是 1");
    if (rid === null) throw badField("rid", `必须是 1–${MAX_RID_CHARS} 个字符的字符串`);
    const type = f.raw("type");
    if (!isRequestType(type)) throw badField("type", "不是已知的请求类型");
    const parser = PARSERS[type] as FrameParser<RequestType>;
    const frame = { v: 1, type, rid, ...parser(f, limits) } as RequestFrame;
    return { ok: true, frame };
  } catch (error) {
    if (error instanceof ProtocolError) return fail(rid, error);
    throw error;
  }
}

function readRid(f: Fields): string | null {
  const rid = f.raw("rid");
  if (typeof rid !== "string" || !rid.isWellFormed()) return null;
  const chars = charCount(rid);
  return chars >= 1 && chars <= MAX_RID_CHARS ? rid : null;
}

function fail(rid: string | null, error: ProtocolError): ParseResult {
  return { ok: false, rid, error };
}
