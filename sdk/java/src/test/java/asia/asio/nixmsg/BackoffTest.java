package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reconnect schedule of spec 9 step 4. */
class BackoffTest {
  @Test
  void doublesFromOneSecondUpToThirtyWithoutJitterAtTheMiddle() {
    Backoff b = new Backoff(1000, 30_000, 0.3, () -> 0.5);
    List<Long> delays = new ArrayList<>();
    for (int i = 0; i < 8; i++) delays.add(b.next());
    assertEquals(
        Arrays.asList(1000L, 2000L, 4000L, 8000L, 16000L, 30000L, 30000L, 30000L), delays);
    assertEquals(8, b.attempts());
  }

  @Test
  void jitterIsPlusMinusThirtyPercent() {
    assertEquals(700, new Backoff(1000, 30_000, 0.3, () -> 0.0).next());
    assertEquals(1300, new Backoff(1000, 30_000, 0.3, () -> 1.0).next());
    Backoff capped = new Backoff(1000, 30_000, 0.3, () -> 1.0);
    long last = 0;
    for (int i = 0; i < 40; i++) last = capped.next();
    assertEquals(39_000, last, "the cap applies before the jitter");
  }

  @Test
  void defaultScheduleStaysWithinTheSpecsBounds() {
    Backoff b = new Backoff();
    long first = b.next();
    assertTrue(first >= 700 && first <= 1300, "first delay " + first);
    for (int i = 0; i < 50; i++) {
      long d = b.next();
      assertTrue(d >= 700 && d <= 39_000, "delay " + d);
    }
  }

  @Test
  void resetStartsAgainAtOneSecond() {
    Backoff b = new Backoff(1000, 30_000, 0.3, () -> 0.5);
    b.next();
    b.next();
    b.next();
    b.reset();
    assertEquals(0, b.attempts());
    assertEquals(1000, b.next());
  }

  @Test
  void aConnectionOnlineForSixtySecondsResetsTheSchedule() {
    Backoff b = new Backoff(1000, 30_000, 0.3, () -> 0.5);
    assertEquals(1000, Link.retryDelay(b, false, 0, 0), "a failed attempt");
    assertEquals(2000, Link.retryDelay(b, false, 0, 0));
    assertEquals(4000, Link.retryDelay(b, true, 0, 59_999), "online for less than 60 s");
    assertEquals(1000, Link.retryDelay(b, true, 0, 60_000), "online for 60 s");
    assertEquals(2000, Link.retryDelay(b, false, 0, 120_000), "failed attempts go on doubling");
  }
}
