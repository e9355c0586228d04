/** Message body encodings of spec 6.2: `utf8` carries text, `base64` carries bytes. */
import { Buffer } from "node:buffer";
import type { BodyEnc } from "./frames.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes `body.data` into the bytes that are stored and counted against `max_body_bytes`.
 * Base64 must be canonical standard base64 with padding: whitespace, the URL-safe alphabet,
 * missing padding and non-zero trailing bits are rejected (returns null), so every body has
 * exactly one wire form and the request fingerprint (spec 7.3) cannot be dodged.
 *
 * @example
 * ```ts
 * decodeBodyData("base64", "aGk="); // Uint8Array [104, 105]
 * decodeBodyData("base64", "aGk"); // null
 * ```
 */
export function decodeBodyData(enc: BodyEnc, data: string): Uint8Array | null {
  if (enc === "utf8") return encoder.encode(data);
  if (data.length % 4 !== 0) return null;
  const bytes = Buffer.from(data, "base64");
  if (bytes.toString("base64") !== data) return null;
  return new Uint8Array(bytes);
}

/**
 * Renders stored body bytes back into `body.data` for a `msg` frame (spec 6.3). Throws when
 * `utf8` bytes are not valid UTF-8, which `decodeBodyData` never produces.
 *
 * @example
 * ```ts
 * encodeBodyData("base64", new Uint8Array([104, 105])); // "aGk="
 * ```
 */
export function encodeBodyData(enc: BodyEnc, bytes: Uint8Array): string {
  if (enc === "utf8") return decoder.decode(bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/**
 * Returns how many bytes a padded base64 string decodes to, from its length and padding alone.
 * Used to refuse a body that is too large before decoding it.
 *
 * @example
 * ```ts
 * base64DecodedLength("aGk="); // 2
 * ```
 */
export function base64DecodedLength(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(data.length / 4) * 3 - padding);
}
