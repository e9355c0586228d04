/** The reconnect and retry schedule of spec 9 step 4. */

/** Parameters of a {@link Backoff}; the defaults are the spec's. */
export interface BackoffOptions {
  /** First delay in ms (1 s). */
  readonly initialMs?: number;
  /** Largest delay before jitter, in ms (30 s). */
  readonly maxMs?: number;
  /** Relative jitter, applied as ± this fraction (0.3). */
  readonly jitter?: number;
  /** Random source in [0, 1); tests pass a fixed one. */
  readonly random?: () => number;
}

/**
 * Exponential backoff: 1 s, doubling up to 30 s, each delay ±30% jitter (spec 9 step 4).
 *
 * @example
 * ```ts
 * const backoff = new Backoff();
 * setTimeout(reconnect, backoff.next()); // about 1 s, then 2 s, 4 s … 30 s
 * backoff.reset(); // after 60 s online
 * ```
 */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 1000;
    this.#maxMs = options.maxMs ?? 30_000;
    this.#jitter = options.jitter ?? 0.3;
    this.#random = options.random ?? Math.random;
  }

  /** How many delays were handed out since the last reset. */
  get attempts(): number {
    return this.#attempt;
  }

  /** The delay before the next try, in ms; each call advances the schedule. */
  next(): number {
    const base = Math.min(this.#maxMs, this.#initialMs * 2 ** Math.min(this.#attempt, 30));
    this.#attempt++;
    const factor = 1 + this.#jitter * (2 * this.#random() - 1);
    return Math.round(base * factor);
  }

  /** Starts the schedule again at the first delay. */
  reset(): void {
    this.#attempt = 0;
  }
}
