/**
 * The size of an MQTT connection's first packet, read from its fixed header (issue 28): a CONNECT
 * larger than {@linkcode MAX_CONNECT_BYTES} cannot be a real login and is closed unread.
 */

/**
 * The largest first packet (CONNECT) read from a connection, in bytes of remaining length: ids
 * of at most 64 characters (spec 6.1), a password or session token, a few properties.
 */
export const MAX_CONNECT_BYTES = 16 * 1024;

/**
 * The remaining length of the CONNECT that starts `bytes` (MQTT 5 §1.5.5 variable byte integer):
 * undefined when more bytes are needed, null when it is no CONNECT or the length is malformed.
 *
 * @example
 * connectLength(new Uint8Array([0x10, 0x80, 0x01])); // 128
 */
export function connectLength(bytes: Uint8Array): number | null | undefined {
  if (bytes.length === 0) return undefined;
  if (bytes[0] >> 4 !== 1) return null;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    if (i >= bytes.length) return undefined;
    value += (bytes[i] & 0x7f) * 128 ** (i - 1);
    if ((bytes[i] & 0x80) === 0) return value;
  }
  return null;
}

/** True when `head` (the first bytes of a connection) declares a CONNECT that is too large. */
export function connectTooLarge(head: Uint8Array): boolean {
  const length = connectLength(head);
  return typeof length === "number" && length > MAX_CONNECT_BYTES;
}
