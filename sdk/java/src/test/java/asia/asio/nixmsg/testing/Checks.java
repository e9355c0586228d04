package asia.asio.nixmsg.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import asia.asio.nixmsg.ErrorCodes;
import asia.asio.nixmsg.NixMsgException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Assertions on SDK futures. */
public final class Checks {
  private Checks() {}

  /** The future's value, within the default wait. */
  public static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(Events.WAIT_MS, TimeUnit.MILLISECONDS);
  }

  /**
   * The code of {@code error} (a NixMsgException, or an ExecutionException or CompletionException
   * around one), asserting that it is the SDK's error type and the code one of the exported
   * ErrorCodes.
   */
  public static String codeOf(Throwable error) {
    NixMsgException err = NixMsgException.from(error);
    assertNotNull(err, "expected a NixMsgException, got " + error);
    assertTrue(
        ErrorCodes.SERVER_CODES.contains(err.code()) || ErrorCodes.SDK_CODES.contains(err.code()),
        err.code() + " is one of the exported ErrorCodes");
    return err.code();
  }

  /** Asserts that the future fails with a NixMsgException of {@code code}; returns it. */
  public static NixMsgException failsWith(String code, CompletableFuture<?> f) throws Exception {
    try {
      Object v = f.get(Events.WAIT_MS, TimeUnit.MILLISECONDS);
      fail("expected " + code + ", got the value " + v);
      return null;
    } catch (ExecutionException e) {
      NixMsgException err = NixMsgException.from(e);
      assertNotNull(err, "expected a NixMsgException, got " + e.getCause());
      assertEquals(code, err.code(), "error code (" + err.getMessage() + ")");
      assertTrue(
          ErrorCodes.SERVER_CODES.contains(code) || ErrorCodes.SDK_CODES.contains(code),
          code + " is one of the exported ErrorCodes");
      return err;
    }
  }
}
