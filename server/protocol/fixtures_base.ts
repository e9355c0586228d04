/** Shared limits, types and builders of the fixture catalogue; import them from fixtures.ts. */
import type { ErrorCode } from "./errors.ts";
import type { FrameFields } from "./fields.ts";
import type { RequestFrame, RequestType } from "./frames.ts";
import type { ProtocolLimits } from "./limits.ts";

/** The defaults of spec 11.1, plus `max_frame_bytes` for the local checks. */
export const TEST_LIMITS: ProtocolLimits & { readonly max_frame_bytes: number } = Object.freeze({
  max_body_bytes: 262144,
  max_meta_bytes: 4096,
  max_ttl_seconds: 2592000,
  max_schedule_seconds: 31536000,
  max_group_members: 1000,
  max_frame_bytes: 786432,
});

/** The `rid` every fixture uses. */
export const FIXTURE_RID = "r1";

/** A request that parses: its wire object and the frame `parseRequest` must return. */
export interface GoodRequest {
  readonly wire: Record<string, unknown>;
  readonly frame: RequestFrame;
}

/**
 * A request that fails with `code`; `rid` is what the failure must carry. When it is null the
 * frame had no readable `rid`; the server still answers `bad_request`, with `rid: ""`.
 */
export interface BadRequest {
  readonly wire: Record<string, unknown>;
  readonly code: ErrorCode;
  readonly rid: string | null;
}

/** A raw payload that fails before any field is read. */
export interface BadPayload {
  readonly payload: Uint8Array;
  readonly code: ErrorCode;
  readonly rid: string | null;
}

const encoder = new TextEncoder();

/** Encodes a wire object the way a client publishes it. */
export function encodeWire(wire: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(wire));
}

/** A wire request of `type` with the fixture `rid`. */
export function wireOf(
  type: string,
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  return { v: 1, type, rid: FIXTURE_RID, ...fields };
}

/** A good fixture: the wire fields and the parsed fields, type-checked against the frame type. */
export function good<T extends RequestType>(
  type: T,
  wire: Record<string, unknown>,
  parsed: FrameFields<T>,
): GoodRequest {
  return {
    wire: wireOf(type, wire),
    frame: { v: 1, type, rid: FIXTURE_RID, ...parsed } as RequestFrame,
  };
}

/** A bad fixture of `type`; the failure carries the fixture `rid`. */
export function bad(
  type: RequestType,
  wire: Record<string, unknown>,
  code: ErrorCode = "bad_request",
): BadRequest {
  return { wire: wireOf(type, wire), code, rid: FIXTURE_RID };
}

/** `n` distinct valid ids. */
export function ids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `e${i}`);
}

/** A small seeded PRNG (mulberry32), so the randomized tests are reproducible. */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The payload field names of the request frames (spec 6), for the fuzz tests' random objects. */
export const REQUEST_FIELD_NAMES: readonly string[] = [
  "id",
  "to",
  "kind",
  "body",
  "enc",
  "data",
  "content_type",
  "meta",
  "send_at_ms",
  "delay_ms",
  "offline",
  "keep",
  "ttl_seconds",
  "receipt",
  "talk_password",
  "max_receive_bytes",
  "client",
  "from",
  "cursor",
  "limit",
  "receipt_id",
  "ids",
  "query",
  "all",
  "endpoint_id",
  "name",
  "default_delay_ms",
  "old_password",
  "new_password",
  "members",
  "group_id",
];
