package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The bounded dedup record of spec 9 ("接收"). */
class DedupCacheTest {
  @Test
  void dropsTheOldestRecordBeyondTheCapacity() {
    DedupCache<String> c = new DedupCache<>(3);
    c.set("a", "1");
    c.set("b", "2");
    c.set("c", "3");
    c.set("d", "4");
    assertEquals(3, c.size());
    assertNull(c.get("a"), "the oldest went");
    assertEquals("4", c.get("d"));
  }

  @Test
  void updatingAKeyKeepsItsPlaceInTheOrder() {
    DedupCache<String> c = new DedupCache<>(2);
    c.set("a", "delivered");
    c.set("b", "delivered");
    c.set("a", "acked");
    c.set("c", "delivered");
    assertNull(c.get("a"), "a was inserted first, so it goes first");
    assertEquals("delivered", c.get("b"));
  }

  @Test
  void deleteForgetsAKey() {
    DedupCache<String> c = new DedupCache<>(10);
    c.set("a", "x");
    c.delete("a");
    assertNull(c.get("a"));
    assertEquals(0, c.size());
  }

  @Test
  void keyIsSenderAndIdAndCapacityMustBePositive() {
    assertNotEquals(DedupCache.messageKey("ab", "c"), DedupCache.messageKey("a", "bc"));
    assertEquals(
        ErrorCodes.BAD_REQUEST,
        codeOf(assertThrows(NixMsgException.class, () -> new DedupCache<String>(0))));
  }
}
