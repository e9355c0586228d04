/** The `send` request (spec 6.2) and its send time (spec 6.2, 7.3 step 3). */
import { base64DecodedLength, decodeBodyData } from "./body.ts";
import { jsonByteSizeWithin } from "./canonical_json.ts";
import { ProtocolError } from "./errors.ts";
import { checkBodySize } from "./local_checks.ts";
import { badField, Fields, type FieldShape, type FrameFields } from "./fields.ts";
import type { BodyEnc, JsonObject, SendBody, SendFrame, Target } from "./frames.ts";
import {
  DEFAULT_BASE64_CONTENT_TYPE,
  DEFAULT_TTL_SECONDS,
  DEFAULT_UTF8_CONTENT_TYPE,
  MAX_CONTENT_TYPE_CHARS,
  MAX_TALK_PASSWORD_CHARS,
  type ProtocolLimits,
} from "./limits.ts";
import { utf8Length } from "./text.ts";

/**
 * Every field {@linkcode parseSend} reads, at every level (`meta` is free-form). The MQTT frame
 * ignores others, so newer clients keep working; the HTTP send route refuses them (issue 28,
 * docs/admin-api.md).
 */
export const SEND_FIELDS: FieldShape = {
  id: true,
  to: { kind: true, id: true },
  body: { enc: true, data: true, content_type: true },
  meta: true,
  send_at_ms: true,
  delay_ms: true,
  offline: { keep: true, ttl_seconds: true },
  receipt: true,
  talk_password: true,
};

/**
 * Reads the fields of a `send` request (spec 6.2). Bounds that depend on the clock or on the
 * sender's settings (`max_schedule_seconds`, the default delay) are left to `resolveSendAt`,
 * because spec 7.3 checks them only after the idempotency lookup.
 */
export function parseSend(f: Fields, limits: ProtocolLimits): FrameFields<"send"> {
  const id = f.id("id");
  const to = readTarget(f.object("to"));
  const body = readBody(f.object("body"), limits.max_body_bytes);
  const meta = readMeta(f, limits.max_meta_bytes);
  const send_at_ms = f.optInt("send_at_ms", 0, Number.MAX_SAFE_INTEGER);
  const delay_ms = f.optInt("delay_ms", 0, Number.MAX_SAFE_INTEGER);
  if (send_at_ms !== null && delay_ms !== null) {
    throw badField("send_at_ms", "和 delay_ms 最多出现一个");
  }
  const offline = f.optObject("offline") ?? new Fields({}, "offline");
  const keep = offline.bool("keep", false);
  // ttl_seconds means nothing without keep, so then it is not hashed (spec 7.3), but it is
  // still checked (spec 6.2: at most max_ttl_seconds); 0 is allowed there, because SDKs with
  // zero-valued structs send ttl_seconds: 0. The default never exceeds a smaller maximum.
  if (!keep) offline.optInt("ttl_seconds", 0, limits.max_ttl_seconds);
  const ttl_seconds = keep
    ? offline.optInt("ttl_seconds", 1, limits.max_ttl_seconds) ??
      Math.min(DEFAULT_TTL_SECONDS, limits.max_ttl_seconds)
    : 0;
  const receipt = f.bool("receipt", true);
  const password = f.optString("talk_password", { max: MAX_TALK_PASSWORD_CHARS });
  return {
    id,
    to,
    body,
    meta,
    send_at_ms,
    delay_ms,
    offline: { keep, ttl_seconds },
    receipt,
    talk_password: password === "" ? null : password,
  };
}

function readTarget(to: Fields): Target {
  const kind = to.raw("kind");
  if (kind !== "endpoint" && kind !== "group") {
    throw badField(to.path("kind"), "必须是 endpoint 或 group");
  }
  return { kind, id: to.id("id") };
}

function readBody(body: Fields, maxBodyBytes: number): SendBody {
  const enc = body.raw("enc");
  if (enc !== "utf8" && enc !== "base64") throw badField(body.path("enc"), "必须是 utf8 或 base64");
  const data = body.raw("data");
  if (typeof data !== "string") throw badField(body.path("data"), "必须是字符串");
  const bytes = decodeChecked(enc, data, maxBodyBytes, body.path("data"));
  const given = body.optString("content_type", { max: MAX_CONTENT_TYPE_CHARS });
  const content_type = given === null || given === ""
    ? (enc === "utf8" ? DEFAULT_UTF8_CONTENT_TYPE : DEFAULT_BASE64_CONTENT_TYPE)
    : given;
  return { enc, content_type, data, bytes };
}

// The limit counts decoded bytes (spec 6.2); the size is known before decoding.
function decodeChecked(enc: BodyEnc, data: string, max: number, path: string): Uint8Array {
  if (enc === "utf8") {
    if (!data.isWellFormed()) throw badField(path, "含有不成对的代理字符");
  } else if (data.length % 4 !== 0) {
    throw badField(path, "不是规范的 base64（需要补齐 =）");
  }
  const size = enc === "utf8" ? utf8Length(data) : base64DecodedLength(data);
  const tooLarge = checkBodySize(size, max);
  if (tooLarge !== null) throw tooLarge;
  const bytes = decodeBodyData(enc, data);
  if (bytes === null) throw badField(path, "不是规范的 base64");
  return bytes;
}

function readMeta(f: Fields, maxMetaBytes: number): JsonObject {
  // JSON.parse produced it, so every value inside is a JsonValue.
  const meta = (f.rawObject("meta") ?? {}) as JsonObject;
  if (jsonByteSizeWithin(meta, maxMetaBytes) === null) {
    throw new ProtocolError("meta_too_large", `自定义字段超限：序列化后超过 ${maxMetaBytes} 字节`);
  }
  return meta;
}

/**
 * Computes the send time of a parsed `send` (spec 6.2): `send_at_ms` (earlier than `now` means
 * now), else `now + delay_ms`, else `now` plus the sender's default delay. An explicit time later
 * than `now + max_schedule_seconds` is a `bad_request`; a stored default delay that a smaller
 * configured maximum no longer allows is clamped to that maximum instead of failing.
 *
 * @example
 * ```ts
 * const at = resolveSendAt(frame, Date.now(), endpoint.default_delay_ms, config.limits);
 * if (at instanceof ProtocolError) return errResp(frame.rid, at);
 * ```
 */
export function resolveSendAt(
  frame: Pick<SendFrame, "send_at_ms" | "delay_ms">,
  now: number,
  defaultDelayMs: number,
  limits: Pick<ProtocolLimits, "max_schedule_seconds">,
): number | ProtocolError {
  const maxDelay = limits.max_schedule_seconds * 1000;
  const latest = now + maxDelay;
  if (frame.send_at_ms !== null) {
    if (frame.send_at_ms > latest) return tooFar("send_at_ms", limits.max_schedule_seconds);
    return Math.max(now, frame.send_at_ms);
  }
  if (frame.delay_ms !== null) {
    if (frame.delay_ms > maxDelay) return tooFar("delay_ms", limits.max_schedule_seconds);
    return now + frame.delay_ms;
  }
  return now + Math.min(Math.max(0, defaultDelayMs), maxDelay);
}

function tooFar(field: string, maxScheduleSeconds: number): ProtocolError {
  return badField(field, `算出的发送时刻不能晚于现在 + ${maxScheduleSeconds} 秒`);
}
