package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The SDK's own base64 (Android API 24 lacks java.util.Base64) against the JDK's. */
class Base64CodecTest {
  @Test
  void matchesTheJdkForEveryLengthAndRandomBytes() {
    Random random = new Random(42);
    for (int len = 0; len < 200; len++) {
      byte[] data = new byte[len];
      random.nextBytes(data);
      String jdk = Base64.getEncoder().encodeToString(data);
      assertEquals(jdk, Base64Codec.encode(data));
      assertArrayEquals(data, Base64Codec.decode(jdk));
    }
  }

  @Test
  void refusesWhatIsNotPaddedStandardBase64() {
    assertThrows(IllegalArgumentException.class, () -> Base64Codec.decode("AAA"));
    assertThrows(IllegalArgumentException.class, () -> Base64Codec.decode("AA-_"));
    assertThrows(IllegalArgumentException.class, () -> Base64Codec.decode("A=AA"));
  }
}
