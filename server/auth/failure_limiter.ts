/** Options for {@linkcode FailureLimiter}. */
export interface FailureLimiterOptions {
  /** Failures within the window that lock the key. */
  maxFailures: number;
  /** Length of the sliding window, in ms. */
  windowMs: number;
  /** How long a lock lasts, in ms. */
  lockMs: number;
  /** Milliseconds now; defaults to `Date.now`. */
  clock?: () => number;
  /** Most keys remembered; the least recently touched is dropped beyond it. Default 100000. */
  maxKeys?: number;
  /** Called when a key becomes locked, with the time the lock ends. */
  onLock?: (key: string, until: number) => void;
  /** Called when a lock ends: its time is over, it was cleared, or its key was evicted. */
  onUnlock?: (key: string, reason: UnlockReason) => void;
}

/** Why a lock ended. */
export type UnlockReason = "expired" | "cleared" | "evicted";

interface Entry {
  /** Times of the failures still inside the window, oldest first. */
  failures: number[];
  /** When the lock ends; 0 when not locked. */
  lockedUntil: number;
  /** Attempts reserved by {@linkcode FailureLimiter.reserve} and not yet settled. */
  inFlight: number;
  /** The lock came from another node through {@linkcode FailureLimiter.imposeLock}: its end is
   * that node's to report, not this one's. */
  imposed?: boolean;
}

/**
 * Counts failures per key in a sliding window and locks a key for a while once it reaches the
 * limit (spec 5 "锁定"). State is in memory only and starts empty on every restart. After a lock
 * ends the count starts from zero.
 *
 * An attempt whose secret check is asynchronous (argon2) reserves a slot first and settles it
 * after the check: failures in the window plus attempts in flight never exceed the limit, so a
 * burst of concurrent guesses cannot get more checks than the rule allows (issue 18).
 *
 * @example
 * ```ts
 * const limiter = new FailureLimiter({ maxFailures: 10, windowMs: 300_000, lockMs: 300_000 });
 * if (!limiter.hasRoom(ip)) return reject();
 * limiter.reserve(ip);
 * limiter.settle(ip, !(await checkPassword()));
 * ```
 */
export class FailureLimiter {
  #max: number;
  #windowMs: number;
  #lockMs: number;
  #clock: () => number;
  #maxKeys: number;
  #onLock: (key: string, until: number) => void;
  #onUnlock: (key: string, reason: UnlockReason) => void;
  // Map order is the order keys were last touched, so the first key is the one to evict.
  #entries = new Map<string, Entry>();
  // Locks in the order they end (every lock lasts lockMs), for sweep(); starts at #head.
  #expiries: { key: string; until: number }[] = [];
  #head = 0;

  constructor(opts: FailureLimiterOptions) {
    for (const name of ["maxFailures", "windowMs", "lockMs"] as const) {
      if (!Number.isFinite(opts[name]) || opts[name] <= 0) {
        throw new RangeError(`Cannot create failure limiter: ${name} must be positive`);
      }
    }
    const maxKeys = opts.maxKeys ?? 100_000;
    if (!Number.isInteger(maxKeys) || maxKeys < 1) {
      throw new RangeError("Cannot create failure limiter: maxKeys must be a positive integer");
    }
    this.#max = opts.maxFailures;
    this.#windowMs = opts.windowMs;
    this.#lockMs = opts.lockMs;
    this.#clock = opts.clock ?? Date.now;
    this.#maxKeys = maxKeys;
    this.#onLock = opts.onLock ?? (() => {});
    this.#onUnlock = opts.onUnlock ?? (() => {});
  }

  /** Whether `key` is locked now; a locked key is rejected without hashing (spec 5). */
  isLocked(key: string): boolean {
    return this.lockedUntil(key) !== null;
  }

  /** When the lock on `key` ends (ms, same clock), or null when it is not locked. */
  lockedUntil(key: string): number | null {
    const entry = this.#live(key);
    return entry && entry.lockedUntil !== 0 ? entry.lockedUntil : null;
  }

  /**
   * Whether one more attempt may start for `key`: it is not locked, and its failures in the
   * window plus its attempts in flight are below the limit.
   */
  hasRoom(key: string): boolean {
    const entry = this.#live(key);
    if (!entry) return true;
    if (entry.lockedUntil !== 0) return false;
    this.#prune(entry, this.#clock());
    return entry.failures.length + entry.inFlight < this.#max;
  }

  /** Counts one attempt in flight for `key`; call only after {@linkcode hasRoom} said yes. */
  reserve(key: string): void {
    this.#touch(key).inFlight++;
  }

  /**
   * Ends an attempt begun with {@linkcode reserve}; a failed one is counted. Returns true when
   * this failure reached the limit and locked the key.
   */
  settle(key: string, failed: boolean): boolean {
    const entry = this.#entries.get(key);
    if (entry && entry.inFlight > 0) entry.inFlight--;
    if (failed) return this.recordFailure(key);
    if (entry && entry.inFlight === 0 && entry.failures.length === 0 && entry.lockedUntil === 0) {
      this.#entries.delete(key);
    }
    return false;
  }

  /**
   * Counts one failure for `key` without a reservation. Returns true when this failure reached
   * the limit and locked the key. A failure reported while the key is locked is not counted.
   */
  recordFailure(key: string): boolean {
    const now = this.#clock();
    const entry = this.#touch(key);
    if (entry.lockedUntil !== 0) return false;
    this.#prune(entry, now);
    entry.failures.push(now);
    if (entry.failures.length < this.#max) return false;
    entry.failures = [];
    entry.lockedUntil = now + this.#lockMs;
    entry.imposed = false;
    this.#expiries.push({ key, until: entry.lockedUntil });
    this.#onLock(key, entry.lockedUntil);
    return true;
  }

  /**
   * Locks `key` until `until` because the shared counters say so (issue 30: a cluster counts in
   * the store). `own`: this node's failure started that lock, so it reports the start (unless its
   * own count already locked) and the end, as for a lock of its own; otherwise another node's did,
   * and neither is reported here. Failures are forgotten; a lock that ends later is kept.
   */
  imposeLock(key: string, until: number, own = false): void {
    if (until <= this.#clock()) return;
    const entry = this.#touch(key);
    if (entry.lockedUntil >= until) return;
    const wasLocked = entry.lockedUntil !== 0;
    entry.failures = [];
    entry.lockedUntil = until;
    if (own) {
      if (!wasLocked || entry.imposed) this.#onLock(key, until);
      entry.imposed = false;
    } else if (!wasLocked) {
      entry.imposed = true;
    }
    // Locks imposed from the store may end out of order; sweep() stops at the first one not due,
    // so a later one waits at most one lock length longer to be reported, never longer to end.
    this.#expiries.push({ key, until });
  }

  /**
   * Ends every lock whose time is over, so its end is reported even when nobody asks about the
   * key again. Call it periodically; it only looks at locks that are due.
   */
  sweep(): void {
    const now = this.#clock();
    const q = this.#expiries;
    while (this.#head < q.length && q[this.#head].until <= now) {
      const { key, until } = q[this.#head++];
      const entry = this.#entries.get(key);
      if (entry && entry.lockedUntil === until) this.#live(key);
    }
    if (this.#head > 1024 && this.#head * 2 > q.length) {
      q.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Forgets the failures and any lock of `key`. */
  clear(key: string): void {
    this.#reset(key);
  }

  /** Forgets every key that starts with `prefix`; a scan over all keys, for rare admin use. */
  clearPrefix(prefix: string): void {
    for (const key of [...this.#entries.keys()]) {
      if (key.startsWith(prefix)) this.#reset(key);
    }
  }

  /** Keys remembered now, for metrics and tests. */
  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key` with an expired lock lifted, or undefined when nothing is known. */
  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (!entry || entry.lockedUntil === 0 || this.#clock() < entry.lockedUntil) return entry;
    // The lock is over; its failures were cleared when it began, so only reservations remain.
    if (!entry.imposed) this.#onUnlock(key, "expired");
    if (entry.inFlight === 0) {
      this.#entries.delete(key);
      return undefined;
    }
    entry.lockedUntil = 0;
    return entry;
  }

  /** The entry of `key`, created if needed and moved to the most recently used end. */
  #touch(key: string): Entry {
    let entry = this.#live(key);
    if (entry) {
      this.#entries.delete(key);
    } else {
      entry = { failures: [], lockedUntil: 0, inFlight: 0 };
      this.#evictFor(1);
    }
    this.#entries.set(key, entry);
    return entry;
  }

  /** Drops failures older than the window. */
  #prune(entry: Entry, now: number): void {
    const cutoff = now - this.#windowMs;
    let stale = 0;
    while (stale < entry.failures.length && entry.failures[stale] <= cutoff) stale++;
    if (stale > 0) entry.failures.splice(0, stale);
  }

  /** Forgets failures and lock but keeps attempts in flight, so they still settle correctly. */
  #reset(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    if (entry.lockedUntil !== 0) {
      if (!entry.imposed) {
        this.#onUnlock(key, this.#clock() < entry.lockedUntil ? "cleared" : "expired");
      }
    }
    if (entry.inFlight === 0) this.#entries.delete(key);
    else Object.assign(entry, { failures: [], lockedUntil: 0 });
  }

  #evictFor(incoming: number): void {
    while (this.#entries.size + incoming > this.#maxKeys) {
      const oldest = this.#entries.entries().next();
      if (oldest.done) return;
      const [key, entry] = oldest.value;
      this.#entries.delete(key);
      if (entry.lockedUntil !== 0) {
        if (!entry.imposed) {
          this.#onUnlock(key, this.#clock() < entry.lockedUntil ? "evicted" : "expired");
        }
      }
    }
  }
}
