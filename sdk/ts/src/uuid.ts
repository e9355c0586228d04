/**
 * A UUIDv7 in its 36-character form (RFC 9562): 48 bits of Unix milliseconds, then random bits.
 * The SDK uses it as the message id (spec 6.2).
 *
 * @example
 * ```ts
 * uuidv7(); // "019ac1f2-7b3c-7d41-9a0e-5f2b8c1d3e4f"
 * ```
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(
      20,
    )
  }`;
}
