package asia.asio.nixmsg;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** Futures handed to the application, and the bounded pools they complete on. */
final class Futures {
  /** Threads of a client's own completion pool (idle ones end after {@link #IDLE_SECONDS}). */
  static final int COMPLETION_THREADS = 2;

  private static final long IDLE_SECONDS = 10;

  /** Where registration (no client) runs its HTTP call and completes its future. */
  static final ThreadPoolExecutor REGISTER = pool("nixmsg-register", COMPLETION_THREADS);

  private Futures() {}

  /**
   * A pool of at most {@code threads} daemon threads with an unbounded queue; idle threads end,
   * so an unused pool holds none.
   */
  static ThreadPoolExecutor pool(String name, int threads) {
    return pool(ClientCore.daemon(name), threads);
  }

  static ThreadPoolExecutor pool(java.util.concurrent.ThreadFactory factory, int threads) {
    ThreadPoolExecutor p =
        new ThreadPoolExecutor(
            threads,
            threads,
            IDLE_SECONDS,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<Runnable>(),
            factory);
    p.allowCoreThreadTimeOut(true);
    return p;
  }

  /**
   * {@code target}, or the calling thread once {@code target} refuses work (the client has
   * ended): a future of a closed client still completes, with {@code closed}.
   */
  static Executor orInline(Executor target) {
    return r -> {
      try {
        target.execute(r);
      } catch (RejectedExecutionException e) {
        r.run();
      }
    };
  }

  /** A future that completes on {@code where}, never on an SDK thread. */
  static <T> CompletableFuture<T> relay(CompletableFuture<T> f, Executor where) {
    CompletableFuture<T> out = new CompletableFuture<>();
    f.whenComplete(
        (v, e) ->
            where.execute(
                () -> {
                  if (e != null) out.completeExceptionally(unwrap(e));
                  else out.complete(v);
                }));
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
