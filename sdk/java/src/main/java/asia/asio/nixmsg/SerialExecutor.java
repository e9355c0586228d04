package asia.asio.nixmsg;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/** Runs tasks one at a time, in submission order, on an underlying executor (spec 9: callbacks are serial). */
final class SerialExecutor implements Executor {
  /** The serial executor whose task runs on this thread, if any. */
  private static final ThreadLocal<SerialExecutor> CURRENT = new ThreadLocal<>();

  private final Executor target;
  private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
  private boolean running;

  SerialExecutor(Executor target) {
    this.target = target;
  }

  @Override
  public void execute(Runnable task) {
    synchronized (this) {
      tasks.add(task);
      if (running) return;
      running = true;
    }
    try {
      target.execute(this::drain);
    } catch (RuntimeException e) {
      // The target refuses work (the client has ended): nothing runs any more.
      synchronized (this) {
        tasks.clear();
        running = false;
      }
    }
  }

  /** True on the thread of a task of this executor (inside an application callback). */
  boolean inTask() {
    return CURRENT.get() == this;
  }

  /** Completes once every task queued before this call has run. */
  CompletableFuture<Void> idle() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    execute(() -> f.complete(null));
    return f;
  }

  private void drain() {
    SerialExecutor outer = CURRENT.get();
    CURRENT.set(this);
    try {
      for (; ; ) {
        Runnable next;
        synchronized (this) {
          next = tasks.poll();
          if (next == null) {
            running = false;
            return;
          }
        }
        try {
          next.run();
        } catch (RuntimeException e) {
          // Tasks catch their own errors; keep draining whatever slipped through.
        }
      }
    } finally {
      if (outer == null) CURRENT.remove();
      else CURRENT.set(outer);
    }
  }
}
