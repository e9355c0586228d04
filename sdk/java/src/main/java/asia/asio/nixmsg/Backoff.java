package asia.asio.nixmsg;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * Exponential backoff of spec 9 step 4: 1 s, doubling up to 30 s, each delay ±30% jitter.
 *
 * <pre>{@code
 * Backoff backoff = new Backoff();
 * long delay = backoff.next(); // about 1 s, then 2 s, 4 s ... 30 s
 * backoff.reset(); // after 60 s online
 * }</pre>
 */
public final class Backoff {
  private final long initialMs;
  private final long maxMs;
  private final double jitter;
  private final DoubleSupplier random;
  private int attempt;

  /** The spec's schedule: 1 s, doubling, at most 30 s, ±30%. */
  public Backoff() {
    this(1000, 30_000, 0.3, null);
  }

  /**
   * @param initialMs first delay in ms
   * @param maxMs largest delay before jitter, in ms
   * @param jitter relative jitter, applied as ± this fraction
   * @param random source in [0, 1); null for a thread-local random
   */
  public Backoff(long initialMs, long maxMs, double jitter, DoubleSupplier random) {
    this.initialMs = initialMs;
    this.maxMs = maxMs;
    this.jitter = jitter;
    this.random = random != null ? random : () -> ThreadLocalRandom.current().nextDouble();
  }

  /** How many delays were handed out since the last reset. */
  public int attempts() {
    return attempt;
  }

  /** The delay before the next try, in ms; each call advances the schedule. */
  public long next() {
    double base = Math.min((double) maxMs, initialMs * Math.pow(2, Math.min(attempt, 30)));
    attempt++;
    double factor = 1 + jitter * (2 * random.getAsDouble() - 1);
    return Math.round(base * factor);
  }

  /** Starts the schedule again at the first delay. */
  public void reset() {
    attempt = 0;
  }
}
