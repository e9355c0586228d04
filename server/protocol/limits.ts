/** The fixed numbers of spec 6, and the configurable limits the parser needs (spec 11.1). */
import type { LimitsConfig } from "../config/types.ts";

/** The subset of `LimitsConfig` that request parsing and `resolveSendAt` read. */
export type ProtocolLimits = Pick<
  LimitsConfig,
  | "max_body_bytes"
  | "max_meta_bytes"
  | "max_ttl_seconds"
  | "max_schedule_seconds"
  | "max_group_members"
>;

/** Longest `rid`, in characters (spec 6). */
export const MAX_RID_CHARS = 64;
/** Smallest `max_receive_bytes` a client may declare (spec 6.1). */
export const MIN_RECEIVE_BYTES = 1024;
/** Longest `client` name in `hello`; the spec gives none, this keeps log lines small. */
export const MAX_CLIENT_CHARS = 128;
/** Longest `content_type` (spec 6.2). */
export const MAX_CONTENT_TYPE_CHARS = 128;
/** Default `content_type` of a `utf8` body (spec 6.2). */
export const DEFAULT_UTF8_CONTENT_TYPE = "text/plain; charset=utf-8";
/** Default `content_type` of a `base64` body (spec 6.2). */
export const DEFAULT_BASE64_CONTENT_TYPE = "application/octet-stream";
/** Default `offline.ttl_seconds` when `keep` is true (spec 6.2). */
export const DEFAULT_TTL_SECONDS = 86400;
/** Longest talk password, in characters (spec 6.6: "" clears, otherwise 1–128). */
export const MAX_TALK_PASSWORD_CHARS = 128;
/** Login password length bounds, in characters (spec 6.6, 12). */
export const MIN_LOGIN_PASSWORD_CHARS = 8;
export const MAX_LOGIN_PASSWORD_CHARS = 128;
/** A login password may not start with this, which marks a session token (spec 5, 12). */
export const SESSION_TOKEN_PREFIX = "nst_";
/** Longest endpoint or group name, in characters (spec 6.6). */
export const MAX_NAME_CHARS = 64;
/** Longest directory `query`; longer text cannot match an id or a name. */
export const MAX_QUERY_CHARS = 64;
/** Most ids in `presence.get` (spec 6.5). */
export const MAX_PRESENCE_GET_IDS = 200;
/** Most ids in `presence.watch` (spec 6.5). */
export const MAX_PRESENCE_WATCH_IDS = 1000;
/** Page size bounds of status, directory.list, group.list and group.get (spec 6.4–6.7). */
export const MAX_PAGE_LIMIT = 200;
export const DEFAULT_PAGE_LIMIT = 100;
/** Longest accepted `cursor`; cursors are opaque strings made by the server. */
export const MAX_CURSOR_CHARS = 256;
