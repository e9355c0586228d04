/** Builds the `send` frame of spec 6.2 from the SDK's options, with the local checks of spec 9. */
import { checkMeta, encodeBody, encodeFrame } from "./body.ts";
import { NixMsgError } from "./errors.ts";
import { frameFor, type SendFrameBody } from "./send_queue.ts";
import type { Recipient, SendOptions } from "./types.ts";
import { uuidv7 } from "./uuid.ts";

/** A rid as long as any the client makes, for the size check before queueing. */
const RID_PLACEHOLDER = "r".repeat(12);

/** The limits a send is checked against: from the last `hello`, or the spec defaults. */
export interface SendLimits {
  readonly maxBodyBytes: number;
  readonly maxMetaBytes: number;
  readonly maxFrameBytes: number;
}

/**
 * The frame content of one send, fixed at call time: the id, and `send_at_ms` converted from the
 * local `sendAt` with the server clock offset once, so that a resend has the same fingerprint
 * (spec 7.3, 9). Throws `bad_request`, `body_too_large`, `meta_too_large` or `frame_too_large`.
 *
 * @example
 * ```ts
 * const frame = buildSendFrame("door-1", "open", { delay: 5000 }, DEFAULT_LIMITS, 0);
 * ```
 */
export function buildSendFrame(
  to: Recipient,
  body: string | Uint8Array,
  options: SendOptions,
  limits: SendLimits,
  offsetMs: number,
): SendFrameBody {
  if (options.sendAt !== undefined && options.delay !== undefined) {
    throw new NixMsgError("bad_request", "Give sendAt or delay, not both");
  }
  const frame: Record<string, unknown> & { id: string } = {
    id: options.id ?? uuidv7(),
    to: typeof to === "string" ? { kind: "endpoint", id: to } : { kind: to.kind, id: to.id },
    body: encodeBody(body, options.contentType, limits.maxBodyBytes),
  };
  if (options.meta !== undefined) {
    checkMeta(options.meta, limits.maxMetaBytes);
    frame.meta = options.meta;
  }
  if (options.sendAt !== undefined) {
    const local = options.sendAt instanceof Date ? options.sendAt.getTime() : options.sendAt;
    frame.send_at_ms = Math.max(0, Math.round(local + offsetMs));
  }
  if (options.delay !== undefined) {
    if (!(Number.isFinite(options.delay) && options.delay >= 0)) {
      throw new NixMsgError(
        "bad_request",
        "delay must be a number of ms, 0 or more",
      );
    }
    frame.delay_ms = Math.round(options.delay);
  }
  if (options.keep !== undefined || options.ttl !== undefined) {
    // A ttl alone means "keep for that long".
    const keep = options.keep ?? true;
    frame.offline = keep && options.ttl !== undefined
      ? { keep, ttl_seconds: options.ttl }
      : { keep };
  }
  if (options.receipt !== undefined) frame.receipt = options.receipt;
  if (options.talkPassword) frame.talk_password = options.talkPassword;
  encodeFrame(frameFor(RID_PLACEHOLDER, frame), limits.maxFrameBytes);
  return frame;
}
