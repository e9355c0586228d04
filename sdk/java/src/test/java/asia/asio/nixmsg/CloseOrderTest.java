package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Events;
import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Tracked;
import java.lang.reflect.Field;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The close of a connection reaches the client's core behind the messages HiveMQ read before
 * it. HiveMQ acknowledges a message once its callback thread has it queued, so the server may
 * close the connection (as after logout) while that thread has not handed the message on yet:
 * before the fix, the close went to the core at once and logout failed with "Connection lost"
 * (the CI flake of checklist 15). Here HiveMQ's callback thread is held while logout's response
 * and the server's close arrive, which makes that order certain.
 */
class CloseOrderTest extends HarnessTest {
  static Object field(Object o, String name) throws Exception {
    Field f = o.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(o);
  }

  /** True once HiveMQ's disconnect callback has queued its task on the held callback thread. */
  static boolean closeQueued(ThreadPoolExecutor mqtt) {
    for (Runnable r : mqtt.getQueue().toArray(new Runnable[0])) {
      if (r.getClass().getName().startsWith(Link.class.getName() + "$$Lambda")) return true;
    }
    return false;
  }

  @Test
  void logoutsResponseIsHandledBeforeTheCloseThatFollowsIt() throws Exception {
    Harness.Endpoint ep = h.endpoint();
    Tracked c = Tracked.online(h.wsUrl(), ep);
    Object core = field(c.client, "core");
    ThreadPoolExecutor mqtt = (ThreadPoolExecutor) field(core, "mqttCallbacks");
    CountDownLatch release = new CountDownLatch(1);
    mqtt.execute(
        () -> {
          try {
            release.await(Events.WAIT_MS, TimeUnit.MILLISECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    CompletableFuture<Void> logout;
    try {
      logout = c.client.logout();
      // Until the close has been reported: queued behind the held thread (as it must be), or
      // handed to the core already (which then stops the client with logout's response unread).
      long deadline = System.currentTimeMillis() + Events.WAIT_MS;
      while (!closeQueued(mqtt) && c.states.count(s -> s.state() == ConnectionState.OFFLINE) == 0) {
        assertTrue(System.currentTimeMillis() < deadline, "the server did not close the connection");
        Thread.sleep(10);
      }
    } finally {
      release.countDown();
    }
    await(logout);
    ConnectionEvent off = c.waitState(ConnectionState.OFFLINE);
    assertEquals("logout", off.reason());
    failsWith(ErrorCodes.CLOSED, c.client.getSelf());
  }
}
