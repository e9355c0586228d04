package asia.asio.nixmsg;

/**
 * Standard, padded base64 (RFC 4648 section 4), as the server requires (spec 6.2). Written here
 * because {@code java.util.Base64} needs Android API 26 and the SDK supports API 24.
 */
final class Base64Codec {
  private static final char[] ALPHABET =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".toCharArray();
  private static final int[] VALUES = new int[128];

  static {
    java.util.Arrays.fill(VALUES, -1);
    for (int i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET[i]] = i;
  }

  private Base64Codec() {}

  static String encode(byte[] data) {
    StringBuilder out = new StringBuilder((data.length + 2) / 3 * 4);
    int i = 0;
    for (; i + 2 < data.length; i += 3) {
      int n = (data[i] & 0xff) << 16 | (data[i + 1] & 0xff) << 8 | (data[i + 2] & 0xff);
      out.append(ALPHABET[n >>> 18])
          .append(ALPHABET[(n >>> 12) & 63])
          .append(ALPHABET[(n >>> 6) & 63])
          .append(ALPHABET[n & 63]);
    }
    int rest = data.length - i;
    if (rest == 1) {
      int n = (data[i] & 0xff) << 16;
      out.append(ALPHABET[n >>> 18]).append(ALPHABET[(n >>> 12) & 63]).append("==");
    } else if (rest == 2) {
      int n = (data[i] & 0xff) << 16 | (data[i + 1] & 0xff) << 8;
      out.append(ALPHABET[n >>> 18])
          .append(ALPHABET[(n >>> 12) & 63])
          .append(ALPHABET[(n >>> 6) & 63])
          .append('=');
    }
    return out.toString();
  }

  /** Decodes padded base64; throws IllegalArgumentException on anything else. */
  static byte[] decode(String text) {
    int len = text.length();
    if (len % 4 != 0) throw new IllegalArgumentException("base64 length is not a multiple of 4");
    int pad = len > 0 && text.charAt(len - 1) == '=' ? (text.charAt(len - 2) == '=' ? 2 : 1) : 0;
    byte[] out = new byte[len / 4 * 3 - pad];
    int o = 0;
    for (int i = 0; i < len; i += 4) {
      int n = 0;
      for (int j = 0; j < 4; j++) {
        char c = text.charAt(i + j);
        int v;
        if (c == '=' && i + 4 == len && j >= 4 - pad) v = 0;
        else if (c < 128 && VALUES[c] >= 0) v = VALUES[c];
        else throw new IllegalArgumentException("Invalid base64 character");
        n = n << 6 | v;
      }
      out[o++] = (byte) (n >>> 16);
      if (o < out.length) out[o++] = (byte) (n >>> 8);
      if (o < out.length) out[o++] = (byte) n;
    }
    return out;
  }
}
