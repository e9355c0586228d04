package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The clock offset of spec 9 ("时间") and its use for sendAt. */
class ClockOffsetTest {
  @Test
  void offsetIsServerTimeMinusTheMiddleOfTheRoundTrip() {
    // hello sent at 1000, response at 1200 (local): the server read its clock at about 1100.
    assertEquals(5000, Link.clockOffset(6100, 1000, 1200));
    assertEquals(-100, Link.clockOffset(1000, 1000, 1200));
    assertEquals(0, Link.clockOffset(1_700_000_000_100L, 1_700_000_000_000L, 1_700_000_000_200L));
    // An odd round trip rounds to the nearest ms.
    assertEquals(1, Link.clockOffset(1001, 1000, 1001));
  }

  @Test
  void sendAtIsConvertedOnceWithTheOffset() {
    SendOptions o = SendOptions.builder().sendAt(1_700_000_000_000L).build();
    com.google.gson.JsonObject frame =
        SendFrame.build(Target.endpoint("b"), "x", o, 262_144, 4096, 786_432, 250);
    assertEquals(1_700_000_000_250L, frame.get("send_at_ms").getAsLong());
    com.google.gson.JsonObject negative =
        SendFrame.build(Target.endpoint("b"), "x", o, 262_144, 4096, 786_432, -2_000_000_000_000L);
    assertEquals(0, negative.get("send_at_ms").getAsLong(), "never before the epoch");
  }
}
