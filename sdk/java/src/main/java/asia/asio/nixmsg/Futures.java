package asia.asio.nixmsg;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** Futures handed to the application: they complete on a pool of their own. */
final class Futures {
  /** Where futures returned to the application complete: never the core or callback thread. */
  static final ExecutorService COMPLETIONS =
      Executors.newCachedThreadPool(ClientCore.daemon("nixmsg-futures"));

  private Futures() {}

  /** A future that completes on the completion pool, never on an SDK thread. */
  static <T> CompletableFuture<T> relay(CompletableFuture<T> f) {
    CompletableFuture<T> out = new CompletableFuture<>();
    f.whenCompleteAsync(
        (v, e) -> {
          if (e != null) out.completeExceptionally(unwrap(e));
          else out.complete(v);
        },
        COMPLETIONS);
    return out;
  }

  static <T> CompletableFuture<T> failed(Throwable e) {
    CompletableFuture<T> f = new CompletableFuture<>();
    f.completeExceptionally(e);
    return f;
  }

  static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
