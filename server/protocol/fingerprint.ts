/** The request fingerprint of spec 7.3, used to tell a retried `send` from a conflicting one. */
import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical_json.ts";
import type { SendFrame } from "./frames.ts";

/** Tags the canonical form, so a future change of it cannot collide with old fingerprints. */
export const FINGERPRINT_FORMAT = "nixmsg-send-fp-1";

/** The fields of a parsed `send` that the fingerprint covers (spec 7.3). */
export type FingerprintInput = Pick<
  SendFrame,
  "to" | "body" | "meta" | "send_at_ms" | "delay_ms" | "offline" | "receipt"
>;

/**
 * Returns the 32-byte SHA-256 request fingerprint of a parsed `send` (spec 7.3).
 *
 * It covers exactly `to.kind`, `to.id`, `body.enc`, `content_type`, the decoded body, `meta`,
 * `send_at_ms`, `delay_ms`, `offline.keep`, `offline.ttl_seconds` and `receipt`, and never
 * `talk_password`, `rid` or the message `id`. The values are hashed as `parseRequest` returns
 * them, after defaults: an omitted field and its default value hash the same (for example an
 * absent `content_type` and `"text/plain; charset=utf-8"`, or `receipt` absent and `true`), and
 * an absent `send_at_ms` or `delay_ms` is hashed as null, so `delay_ms: 0` differs from no delay.
 *
 * Canonical form: the canonical JSON (keys sorted at every level) of the array
 * `[FINGERPRINT_FORMAT, to.kind, to.id, body.enc, content_type, body length, meta, send_at_ms,
 * delay_ms, keep, ttl_seconds, receipt]`, followed by the raw decoded body bytes.
 *
 * @example
 * ```ts
 * const fp = requestFingerprint(frame);
 * if (stored && !sameFingerprint(stored.fingerprint, fp)) return errResp(frame.rid, "conflict");
 * ```
 */
export function requestFingerprint(frame: FingerprintInput): Uint8Array {
  const digest = createHash("sha256").update(fingerprintHead(frame), "utf8")
    .update(frame.body.bytes).digest();
  return new Uint8Array(digest);
}

const json = JSON.stringify;

/**
 * The canonical JSON of the fingerprint's array (see `requestFingerprint`). Every item but `meta`
 * is a string, number, boolean or null, whose canonical form is `JSON.stringify`'s, so the text
 * is built directly: `canonicalJson` of the whole array gives the same text, with a work item per
 * value (issue 19: this runs for every `send`).
 */
export function fingerprintHead(frame: FingerprintInput): string {
  return "[" + json(FINGERPRINT_FORMAT) + "," + json(frame.to.kind) + "," + json(frame.to.id) +
    "," + json(frame.body.enc) + "," + json(frame.body.content_type) + "," +
    json(frame.body.bytes.length) + "," + canonicalJson(frame.meta) + "," +
    json(frame.send_at_ms) + "," + json(frame.delay_ms) + "," + json(frame.offline.keep) + "," +
    json(frame.offline.ttl_seconds) + "," + json(frame.receipt) + "]";
}

/** Returns true when two fingerprints are byte-for-byte equal. */
export function sameFingerprint(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
