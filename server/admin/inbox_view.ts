/**
 * What the live inbox shows of one downlink frame (issue 32): the frame without any `body` or
 * `meta` (spec 8, 12: no admin answer carries a body), plus a summary of a message's body so the
 * console can offer to open it. The body itself stays on the server until the admin opens it.
 */
import type { Static } from "@sinclair/typebox";
import type { InboxBodySummarySchema } from "./inbox_schema.ts";

type InboxBodySummary = Static<typeof InboxBodySummarySchema>;

/** A message body as spec 6.2 carries it. */
export interface FrameBody {
  enc: string;
  content_type: string;
  data: string;
}

/** The summary of a withheld body: characters of `data` as sent (base64 text for binary). */
export type BodySummary = InboxBodySummary;

/** One frame as shown: `frame` is null when the payload was not a JSON object. */
export interface FrameView {
  type: string;
  frame: Record<string, unknown> | null;
  /** The message's body, to keep for an explicit open; null when the frame has none. */
  body: FrameBody | null;
  summary: BodySummary | null;
}

const WITHHELD = new Set(["body", "meta"]);

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!WITHHELD.has(k)) out[k] = strip(v);
  }
  return out;
}

function asBody(value: unknown): FrameBody | null {
  if (typeof value !== "object" || value === null) return null;
  const b = value as Record<string, unknown>;
  if (typeof b.data !== "string") return null;
  return {
    enc: typeof b.enc === "string" ? b.enc : "utf8",
    content_type: typeof b.content_type === "string" ? b.content_type : "",
    data: b.data,
  };
}

/** Decodes a downlink payload and withholds every `body` and `meta` in it. */
export function frameView(payload: Uint8Array): FrameView {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return { type: "", frame: null, body: null, summary: null };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { type: "", frame: null, body: null, summary: null };
  }
  const raw = parsed as Record<string, unknown>;
  const body = asBody(raw.body);
  return {
    type: typeof raw.type === "string" ? raw.type : "",
    frame: strip(raw) as Record<string, unknown>,
    body,
    summary: body === null
      ? null
      : { enc: body.enc, content_type: body.content_type, length: body.data.length },
  };
}
