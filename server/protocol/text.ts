/** String measures used by the limits of spec 6. */

/**
 * Returns the number of bytes `s` takes in UTF-8, without encoding it. A lone surrogate counts
 * as 3 bytes, the size of the U+FFFD that `TextEncoder` writes for it.
 *
 * @example
 * ```ts
 * utf8Length("a中😀"); // 1 + 3 + 4 = 8
 * ```
 */
export function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(s.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Returns the number of characters (Unicode code points) in `s`. The "字符" limits of spec 6
 * (content_type 128, names 64, passwords 8–128) count these, so an emoji is one character.
 *
 * @example
 * ```ts
 * charCount("门口😀"); // 3
 * ```
 */
export function charCount(s: string): number {
  let count = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(s.charCodeAt(i + 1))) i++;
    count++;
  }
  return count;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
