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
  const head = canonicalJson([
    FINGERPRINT_FORMAT,
    frame.to.kind,
    frame.to.id,
    frame.body.enc,
    frame.body.content_type,
    frame.body.bytes.length,
    frame.meta,
    frame.send_at_ms,
    frame.delay_ms,
    frame.offline.keep,
    frame.offline.ttl_seconds,
    frame.receipt,
  ]);
  const digest = createHash("sha256").update(head, "utf8").update(frame.body.bytes).digest();
  return new Uint8Array(digest);
}

/** Returns true when two fingerprints are byte-for-byte equal. */
export function sameFingerprint(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
