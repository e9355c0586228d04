import { randomBytes } from "node:crypto";

/** Letters and digits without the look-alikes 0, O, 1, l and I: 57 symbols. */
export const PASSWORD_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

/** Lowercase letters and digits, for generated ids. */
export const ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * A random password from {@linkcode PASSWORD_ALPHABET}: the 20-character admin password
 * (spec 8), generated endpoint passwords and the 16-character registration code (spec 8).
 *
 * @example
 * ```ts
 * const adminPassword = randomPassword(20);
 * ```
 */
export function randomPassword(length: number): string {
  return randomString(PASSWORD_ALPHABET, length);
}

/**
 * A random id such as "e_ab12cd34": `prefix`, an underscore, then `n` lowercase letters and
 * digits. A prefix that already ends with "_" (or is empty) gets no extra underscore.
 *
 * @example
 * ```ts
 * randomId("e", 8); // "e_k3x9q0za"
 * randomId("g", 8); // "g_0m2hv7cd"
 * ```
 */
export function randomId(prefix: string, n: number): string {
  const joint = prefix === "" || prefix.endsWith("_") ? "" : "_";
  return prefix + joint + randomString(ID_ALPHABET, n);
}

/**
 * Uniform random characters from `alphabet` (at most 256 symbols). Bytes at or above the
 * largest multiple of the alphabet size are rejected, so `byte % size` has no modulo bias.
 */
function randomString(alphabet: string, length: number): string {
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`Cannot generate a random string: length ${length} is not positive`);
  }
  const size = alphabet.length;
  const limit = 256 - (256 % size);
  let out = "";
  while (out.length < length) {
    // Ask for a little more than needed; with 57 symbols about 11% of bytes are rejected.
    for (const byte of randomBytes(length - out.length + 8)) {
      if (byte >= limit) continue;
      out += alphabet[byte % size];
      if (out.length === length) break;
    }
  }
  return out;
}
