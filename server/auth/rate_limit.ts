/** Options for {@linkcode RateLimiter}. */
export interface RateLimiterOptions {
  /** Tokens added per second (config `limits.requests_per_second`). */
  perSecond: number;
  /** Bucket capacity; defaults to twice `perSecond` (spec 11.1 "突发容量为 2 倍"). */
  burst?: number;
  /** Milliseconds now; defaults to `Date.now`. */
  clock?: () => number;
  /**
   * Most buckets kept (issue 28: a map keyed by client input must be bounded); past it the
   * least recently used bucket is dropped, which only gives that key a full bucket again.
   * Default: unbounded, for keys that are existing endpoint ids.
   */
  maxKeys?: number;
}

interface Bucket {
  /** Tokens in thousandths, so integer rates and integer clocks give exact arithmetic. */
  milli: number;
  at: number;
}

const MILLI = 1000;

/**
 * One token bucket per key, for the per-endpoint request rate of spec 6.10: every request except
 * `ack` and `receipt_ack` takes a token, and an empty bucket means `rate_limited`. A new key
 * starts with a full bucket.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ perSecond: config.limits.requests_per_second });
 * if (frame.type !== "ack" && frame.type !== "receipt_ack" && !limiter.take(endpointId)) {
 *   return error("rate_limited");
 * }
 * // on disconnect: limiter.forget(endpointId)
 * ```
 */
export class RateLimiter {
  #perSecond: number;
  #burstMilli: number;
  #clock: () => number;
  #maxKeys: number;
  #buckets = new Map<string, Bucket>();

  constructor(opts: RateLimiterOptions) {
    const burst = opts.burst ?? 2 * opts.perSecond;
    if (!Number.isFinite(opts.perSecond) || opts.perSecond <= 0) {
      throw new RangeError("Cannot create rate limiter: perSecond must be positive");
    }
    if (!Number.isFinite(burst) || burst < 1) {
      throw new RangeError("Cannot create rate limiter: burst must be at least 1");
    }
    this.#perSecond = opts.perSecond;
    this.#burstMilli = burst * MILLI;
    this.#clock = opts.clock ?? Date.now;
    this.#maxKeys = opts.maxKeys ?? Infinity;
    if (!(this.#maxKeys >= 1)) {
      throw new RangeError("Cannot create rate limiter: maxKeys must be at least 1");
    }
  }

  /** Takes one token for `key`; false when the bucket is empty and the request must be refused. */
  take(key: string): boolean {
    const now = this.#clock();
    const bucket = this.#buckets.get(key);
    if (!bucket) {
      if (this.#buckets.size >= this.#maxKeys) {
        this.#buckets.delete(this.#buckets.keys().next().value!);
      }
      this.#buckets.set(key, { milli: this.#burstMilli - MILLI, at: now });
      return true;
    }
    if (this.#maxKeys !== Infinity) {
      // Map order is then the order of last use, so the first key is the one to drop.
      this.#buckets.delete(key);
      this.#buckets.set(key, bucket);
    }
    // A clock that steps back adds nothing rather than taking tokens away. One ms adds
    // perSecond thousandths of a token.
    const elapsed = Math.max(0, now - bucket.at);
    bucket.milli = Math.min(this.#burstMilli, bucket.milli + elapsed * this.#perSecond);
    bucket.at = Math.max(bucket.at, now);
    if (bucket.milli < MILLI) return false;
    bucket.milli -= MILLI;
    return true;
  }

  /** True when `key` has a token now; takes nothing (for a rate on successes only). */
  hasToken(key: string): boolean {
    const bucket = this.#buckets.get(key);
    if (!bucket) return true;
    const elapsed = Math.max(0, this.#clock() - bucket.at);
    return Math.min(this.#burstMilli, bucket.milli + elapsed * this.#perSecond) >= MILLI;
  }

  /**
   * Seconds until `key` has a token again (at least 1), for a `Retry-After` header.
   */
  retryAfterSeconds(key: string): number {
    const bucket = this.#buckets.get(key);
    if (!bucket) return 1;
    const elapsed = Math.max(0, this.#clock() - bucket.at);
    const have = Math.min(this.#burstMilli, bucket.milli + elapsed * this.#perSecond);
    return Math.max(1, Math.ceil((MILLI - have) / this.#perSecond / 1000));
  }

  /** Drops the bucket of `key`, for example when the endpoint disconnects. */
  forget(key: string): void {
    this.#buckets.delete(key);
  }

  /** Buckets held now, for tests and metrics. */
  get size(): number {
    return this.#buckets.size;
  }
}
