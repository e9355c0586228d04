/** Parsers of the small requests of spec 6.1 and 6.3–6.6, one function per frame type. */
import { badField, type Fields, type FrameFields, idItem, readPaging } from "./fields.ts";
import {
  MAX_CLIENT_CHARS,
  MAX_LOGIN_PASSWORD_CHARS,
  MAX_NAME_CHARS,
  MAX_PRESENCE_GET_IDS,
  MAX_PRESENCE_WATCH_IDS,
  MAX_QUERY_CHARS,
  MAX_TALK_PASSWORD_CHARS,
  MIN_LOGIN_PASSWORD_CHARS,
  MIN_RECEIVE_BYTES,
  type ProtocolLimits,
  SESSION_TOKEN_PREFIX,
} from "./limits.ts";

/** spec 6.1: `max_receive_bytes` is at least 1024 when given. */
export function parseHello(f: Fields): FrameFields<"hello"> {
  return {
    max_receive_bytes: f.optInt("max_receive_bytes", MIN_RECEIVE_BYTES, Number.MAX_SAFE_INTEGER),
    client: f.optString("client", { max: MAX_CLIENT_CHARS }),
  };
}

/** spec 6.3 */
export function parseAck(f: Fields): FrameFields<"ack"> {
  return { from: f.id("from"), id: f.id("id") };
}

/** spec 6.4 */
export function parseRecall(f: Fields): FrameFields<"recall"> {
  return { id: f.id("id") };
}

/** spec 6.4: paged, `limit` at most 200. */
export function parseStatus(f: Fields): FrameFields<"status"> {
  return { id: f.id("id"), ...readPaging(f) };
}

/** spec 6.4: receipt ids are made by the server and follow the id pattern. */
export function parseReceiptAck(f: Fields): FrameFields<"receipt_ack"> {
  return { receipt_id: f.id("receipt_id") };
}

/** spec 6.5: at most 200 ids. */
export function parsePresenceGet(f: Fields): FrameFields<"presence.get"> {
  return { ids: f.array("ids", MAX_PRESENCE_GET_IDS, idItem) };
}

/** spec 6.5: paged, with an optional `query`. */
export function parseDirectoryList(f: Fields): FrameFields<"directory.list"> {
  return { ...readPaging(f), query: f.optString("query", { max: MAX_QUERY_CHARS }) ?? "" };
}

/** spec 6.5: at most 1000 ids, or `all: true` (then `ids` is ignored). */
export function parsePresenceWatch(f: Fields): FrameFields<"presence.watch"> {
  const all = f.bool("all", false);
  return { ids: all ? [] : f.array("ids", MAX_PRESENCE_WATCH_IDS, idItem), all };
}

/** spec 6.6: `unlock` of an endpoint without a talk password succeeds, so "" is allowed. */
export function parseUnlock(f: Fields): FrameFields<"unlock"> {
  return {
    endpoint_id: f.id("endpoint_id"),
    talk_password: f.string("talk_password", { max: MAX_TALK_PASSWORD_CHARS }),
  };
}

/** spec 6.6 */
export function parseEmpty(): Record<never, never> {
  return {};
}

/** spec 6.6: `default_delay_ms` at most `max_schedule_seconds` in ms; absent fields stay as they are. */
export function parseSelfUpdate(f: Fields, limits: ProtocolLimits): FrameFields<"self.update"> {
  return {
    name: f.optString("name", { max: MAX_NAME_CHARS }),
    default_delay_ms: f.optInt("default_delay_ms", 0, limits.max_schedule_seconds * 1000),
  };
}

/** spec 6.6: "" clears the talk password; otherwise 1–128 characters. */
export function parseSelfTalkPassword(f: Fields): FrameFields<"self.talk_password"> {
  return { talk_password: f.string("talk_password", { max: MAX_TALK_PASSWORD_CHARS }) };
}

/** spec 6.6, 12: the new password is 8–128 characters and may not start with `nst_`. */
export function parseSelfLoginPassword(f: Fields): FrameFields<"self.login_password"> {
  const old_password = f.string("old_password", { max: MAX_LOGIN_PASSWORD_CHARS });
  const new_password = f.string("new_password", {
    min: MIN_LOGIN_PASSWORD_CHARS,
    max: MAX_LOGIN_PASSWORD_CHARS,
  });
  if (new_password.startsWith(SESSION_TOKEN_PREFIX)) {
    throw badField("new_password", `不能以 ${SESSION_TOKEN_PREFIX} 开头`);
  }
  return { old_password, new_password };
}
