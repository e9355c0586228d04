/** Wire shapes of spec 6 the SDK reads, and their mapping to the public types. */
import { decodeBody, type WireBody } from "./body.ts";
import { NixMsgError } from "./errors.ts";
import type {
  GroupEvent,
  JsonObject,
  Message,
  PresenceEvent,
  Receipt,
  Revoked,
  ServerInfo,
  Target,
} from "./types.ts";

/** A downlink frame as parsed JSON; fields are checked where they are used. */
export type InboundFrame = { readonly type: string } & Record<string, unknown>;

/** `data` of the `hello` response (spec 6.1). */
export interface HelloData {
  readonly server_time_ms: number;
  readonly server_version: string;
  readonly max_body_bytes: number;
  readonly max_meta_bytes: number;
  readonly max_frame_bytes: number;
  readonly max_ttl_seconds: number;
  readonly max_schedule_seconds: number;
  readonly ack_timeout_seconds: number;
  readonly session_token?: string;
}

/** The `hello` data as the public {@link ServerInfo}. */
export function toServerInfo(h: HelloData): ServerInfo {
  return {
    serverTimeMs: h.server_time_ms,
    serverVersion: h.server_version,
    maxBodyBytes: h.max_body_bytes,
    maxMetaBytes: h.max_meta_bytes,
    maxFrameBytes: h.max_frame_bytes,
    maxTtlSeconds: h.max_ttl_seconds,
    maxScheduleSeconds: h.max_schedule_seconds,
    ackTimeoutSeconds: h.ack_timeout_seconds,
  };
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function num(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

function numOrNull(v: unknown): number | null {
  return typeof v === "number" ? v : null;
}

/** A `msg` frame (spec 6.3) as a {@link Message}; null when it lacks `id` or `from`. */
export function toMessage(f: InboundFrame): Message | null {
  if (typeof f.id !== "string" || typeof f.from !== "string") return null;
  const body = (f.body ?? { enc: "utf8", data: "" }) as WireBody;
  const to = (f.to ?? { kind: "endpoint", id: "" }) as Target;
  let decoded: string | Uint8Array;
  try {
    decoded = decodeBody(body);
  } catch {
    return null;
  }
  return {
    id: f.id,
    from: f.from,
    to: { kind: to.kind, id: to.id },
    body: decoded,
    contentType: str(body.content_type),
    meta: (f.meta ?? {}) as JsonObject,
    sendAtMs: num(f.send_at_ms),
  };
}

/** A `receipt` frame (spec 6.4). */
export function toReceipt(f: InboundFrame): Receipt {
  return {
    receiptId: String(f.receipt_id),
    id: str(f.id),
    endpointId: str(f.endpoint_id),
    state: str(f.state) as Receipt["state"],
    reason: str(f.reason),
    atMs: num(f.at_ms),
  };
}

/** A `revoked` frame (spec 6.4). */
export function toRevoked(f: InboundFrame): Revoked {
  return { id: str(f.id), from: str(f.from), reason: str(f.reason) };
}

/** A `presence` frame (spec 6.5). */
export function toPresence(f: InboundFrame): PresenceEvent {
  return { id: str(f.id), online: f.online === true, atMs: num(f.at_ms) };
}

/** A `group_event` frame (spec 6.7). */
export function toGroupEvent(f: InboundFrame): GroupEvent {
  return {
    groupId: str(f.group_id),
    event: str(f.event) as GroupEvent["event"],
    endpointId: str(f.endpoint_id),
    atMs: num(f.at_ms),
  };
}

/** The error of a failed `resp` (spec 6). */
export function respError(f: InboundFrame): NixMsgError {
  const e = (f.error ?? {}) as {
    code?: unknown;
    message?: unknown;
    data?: unknown;
  };
  const code = typeof e.code === "string" ? e.code : "bad_response";
  const data = typeof e.data === "object" && e.data !== null
    ? (e.data as Record<string, unknown>)
    : undefined;
  return new NixMsgError(code, typeof e.message === "string" ? e.message : code, { data });
}

export { num, numOrNull, str };
