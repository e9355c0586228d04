package asia.asio.nixmsg.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Recorded events and bounded waits on them (no fixed sleeps). {@link #expectNone} is the only
 * way to observe an absence: it watches a window and fails on a matching event.
 */
public final class Events<T> {
  /** How long a test waits for an expected event by default (checklist: 15 s). */
  public static final long WAIT_MS = 15_000;

  private final List<T> items = new ArrayList<>();

  /** Records an event; pass {@code events::push} as a callback. */
  public synchronized void push(T item) {
    items.add(item);
    notifyAll();
  }

  public synchronized List<T> items() {
    return new ArrayList<>(items);
  }

  public int count() {
    return count(x -> true);
  }

  public synchronized int count(Predicate<T> pred) {
    int n = 0;
    for (T t : items) if (pred.test(t)) n++;
    return n;
  }

  public T waitFor(Predicate<T> pred, String what) throws InterruptedException {
    return waitFor(pred, what, WAIT_MS);
  }

  /** The first matching event, recorded already or later; fails after {@code timeoutMs}. */
  public synchronized T waitFor(Predicate<T> pred, String what, long timeoutMs)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    for (; ; ) {
      for (T t : items) if (pred.test(t)) return t;
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw new AssertionError("Timed out after " + timeoutMs + " ms waiting for " + what);
      }
      wait(left);
    }
  }

  /** Waits until {@code n} events match. */
  public void waitCount(int n, Predicate<T> pred, String what) throws InterruptedException {
    waitCount(n, pred, what, WAIT_MS);
  }

  /** Waits until {@code n} events match; fails after {@code timeoutMs}. */
  public synchronized void waitCount(int n, Predicate<T> pred, String what, long timeoutMs)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    while (count(pred) < n) {
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw new AssertionError(
            "Timed out waiting for " + n + " x " + what + "; got " + count(pred));
      }
      wait(left);
    }
  }

  /** Waits until {@code cond} holds for all events so far; fails after {@code timeoutMs}. */
  public synchronized void waitUntil(Predicate<List<T>> cond, String what, long timeoutMs)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    while (!cond.test(items)) {
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw new AssertionError("Timed out after " + timeoutMs + " ms waiting for " + what);
      }
      wait(left);
    }
  }

  /** Fails if a matching event arrives within {@code windowMs}; returns after the window. */
  public synchronized void expectNone(Predicate<T> pred, String what, long windowMs)
      throws InterruptedException {
    int before = count(pred);
    long deadline = System.nanoTime() + windowMs * 1_000_000;
    for (; ; ) {
      if (count(pred) != before) throw new AssertionError("Unexpected " + what);
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) return;
      wait(left);
    }
  }
}
