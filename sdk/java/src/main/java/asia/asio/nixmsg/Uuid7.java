package asia.asio.nixmsg;

import java.security.SecureRandom;

/**
 * A UUIDv7 in its 36-character form (RFC 9562): 48 bits of Unix milliseconds, then random bits.
 * The SDK uses it as the message id (spec 6.2).
 */
final class Uuid7 {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private Uuid7() {}

  static String next() {
    return next(System.currentTimeMillis());
  }

  static String next(long nowMs) {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    long ms = nowMs;
    for (int i = 5; i >= 0; i--) {
      b[i] = (byte) (ms & 0xff);
      ms >>>= 8;
    }
    b[6] = (byte) (0x70 | (b[6] & 0x0f));
    b[8] = (byte) (0x80 | (b[8] & 0x3f));
    StringBuilder sb = new StringBuilder(36);
    for (int i = 0; i < 16; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) sb.append('-');
      sb.append(HEX[(b[i] >> 4) & 0xf]).append(HEX[b[i] & 0xf]);
    }
    return sb.toString();
  }
}
