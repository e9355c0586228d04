import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Prefix of MQTT session tokens; login passwords may not start with it (spec 5, 12). */
export const SESSION_TOKEN_PREFIX = "nst_";
/** Prefix of admin API tokens (spec 8). */
export const API_TOKEN_PREFIX = "nxm_";

const TOKEN_BYTES = 32;
const UTF8 = new TextEncoder();

/**
 * A new MQTT session token: "nst_" and 32 random bytes in unpadded base64url, 47 characters in
 * all (spec 5). Store only its {@linkcode sha256Hex}.
 *
 * @example
 * ```ts
 * const token = newSessionToken(); // "nst_3q2-7w..."
 * const sessionHash = sha256Hex(token);
 * ```
 */
export function newSessionToken(): string {
  return SESSION_TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString("base64url");
}

/** A new admin API token: "nxm_" and 32 random bytes in unpadded base64url (spec 8). */
export function newApiToken(): string {
  return API_TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString("base64url");
}

/** The lowercase hex SHA-256 of the UTF-8 bytes of `text` (spec 5, 8: tokens are stored so). */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * Compares two hex digests in constant time (spec 12). The comparison is over the characters as
 * written, so it is case-sensitive. Different lengths give false without throwing; the length of
 * a digest is public.
 */
export function constantTimeEqualHex(a: string, b: string): boolean {
  const x = UTF8.encode(a);
  const y = UTF8.encode(b);
  if (x.length !== y.length) return false;
  return timingSafeEqual(x, y);
}

// A per-process key, so the digests compared below cannot be precomputed by a caller.
const HMAC_KEY = randomBytes(32);

/**
 * Compares two secrets of any length, such as registration codes, in constant time (spec 6.9,
 * 12). Both are reduced to HMAC-SHA-256 digests first, so neither the length of the stored
 * secret nor the position of the first difference leaks through timing.
 */
export function constantTimeEqualString(a: string, b: string): boolean {
  const x = createHmac("sha256", HMAC_KEY).update(a, "utf8").digest();
  const y = createHmac("sha256", HMAC_KEY).update(b, "utf8").digest();
  return timingSafeEqual(x, y);
}

/** Whether an MQTT password is a session token rather than a login password (spec 5). */
export function isSessionToken(pw: string): boolean {
  return pw.startsWith(SESSION_TOKEN_PREFIX);
}
