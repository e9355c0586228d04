package asia.asio.nixmsg.testing;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base for the integration test classes: starts a fresh {@link Harness} before the class, and
 * after it closes every {@link Tracked} client, then whatever was passed to {@link
 * #closeAtEnd}, then the harness. Test classes run one after another, so the static state is
 * never shared between two running classes.
 */
public abstract class HarnessTest {
  protected static Harness h;
  private static final List<AutoCloseable> AT_END = new ArrayList<>();

  @BeforeAll
  protected static void startHarness() throws Exception {
    h = Harness.start();
  }

  @AfterAll
  protected static void stopHarness() throws Exception {
    Tracked.closeAll();
    for (AutoCloseable c : AT_END) c.close();
    AT_END.clear();
    if (h != null) h.close();
  }

  /** Closes {@code c} after the clients and before the harness, when the class is done. */
  protected static <T extends AutoCloseable> T closeAtEnd(T c) {
    AT_END.add(c);
    return c;
  }
}
