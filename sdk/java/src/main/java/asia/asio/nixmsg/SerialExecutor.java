package asia.asio.nixmsg;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;

/** Runs tasks one at a time, in submission order, on an underlying executor (spec 9: callbacks are serial). */
final class SerialExecutor implements Executor {
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
    target.execute(this::drain);
  }

  private void drain() {
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
  }
}
