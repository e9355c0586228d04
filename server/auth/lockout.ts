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
}

interface Entry {
  /** Times of the failures still inside the window, oldest first. */
  failures: number[];
  /** When the lock ends; 0 when not locked. */
  lockedUntil: number;
}

/**
 * Counts failures per key in a sliding window and locks a key for a while once it reaches the
 * limit (spec 5 "锁定"). State is in memory only and starts empty on every restart. After a lock
 * ends the count starts from zero.
 *
 * @example
 * ```ts
 * const limiter = new FailureLimiter({ maxFailures: 10, windowMs: 300_000, lockMs: 300_000 });
 * if (limiter.isLocked(ip)) return reject();
 * if (!passwordOk) limiter.recordFailure(ip);
 * ```
 */
export class FailureLimiter {
  #max: number;
  #windowMs: number;
  #lockMs: number;
  #clock: () => number;
  #maxKeys: number;
  // Map order is the order keys were last touched, so the first key is the one to evict.
  #entries = new Map<string, Entry>();

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
  }

  /** Whether `key` is locked now; a locked key is rejected without hashing (spec 5). */
  isLocked(key: string): boolean {
    return this.lockedUntil(key) !== null;
  }

  /** When the lock on `key` ends (ms, same clock), or null when it is not locked. */
  lockedUntil(key: string): number | null {
    const entry = this.#entries.get(key);
    if (!entry || entry.lockedUntil === 0) return null;
    if (this.#clock() < entry.lockedUntil) return entry.lockedUntil;
    // The lock is over; the failures were cleared when it began, so nothing is left.
    this.#entries.delete(key);
    return null;
  }

  /**
   * Counts one failure for `key`. Returns true when this failure reached the limit and locked
   * the key. A failure reported while the key is already locked is not counted.
   */
  recordFailure(key: string): boolean {
    const now = this.#clock();
    let entry = this.#entries.get(key);
    if (entry) {
      this.#entries.delete(key);
      if (entry.lockedUntil !== 0) {
        if (now < entry.lockedUntil) {
          this.#entries.set(key, entry);
          return false;
        }
        entry = { failures: [], lockedUntil: 0 };
      }
    } else {
      entry = { failures: [], lockedUntil: 0 };
      this.#evictFor(1);
    }
    const cutoff = now - this.#windowMs;
    let stale = 0;
    while (stale < entry.failures.length && entry.failures[stale] <= cutoff) stale++;
    if (stale > 0) entry.failures.splice(0, stale);
    entry.failures.push(now);
    let locked = false;
    if (entry.failures.length >= this.#max) {
      entry.failures = [];
      entry.lockedUntil = now + this.#lockMs;
      locked = true;
    }
    this.#entries.set(key, entry);
    return locked;
  }

  /** Forgets the failures and any lock of `key`. */
  clear(key: string): void {
    this.#entries.delete(key);
  }

  /** Forgets every key that starts with `prefix`; a scan over all keys, for rare admin use. */
  clearPrefix(prefix: string): void {
    for (const key of this.#entries.keys()) {
      if (key.startsWith(prefix)) this.#entries.delete(key);
    }
  }

  /** Keys remembered now, for metrics and tests. */
  get size(): number {
    return this.#entries.size;
  }

  #evictFor(incoming: number): void {
    while (this.#entries.size + incoming > this.#maxKeys) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) return;
      this.#entries.delete(oldest.value);
    }
  }
}

/** Options shared by the lockout bundles below. */
export interface LockoutOptions {
  /** Milliseconds now; defaults to `Date.now`. */
  clock?: () => number;
  /** Most keys each underlying limiter remembers. Default 100000. */
  maxKeys?: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** 10 failures in 5 minutes lock for 5 minutes (spec 5: per pair and per IP). */
const PAIR_RULE = { maxFailures: 10, windowMs: 5 * MINUTE, lockMs: 5 * MINUTE };
/** 50 failures in 1 hour lock for 1 hour (spec 5: per endpoint, per talk target). */
const TOTAL_RULE = { maxFailures: 50, windowMs: HOUR, lockMs: HOUR };

// Ids and IPs never contain NUL, so "a\0" cannot be the prefix of a key that belongs to "ab".
const SEP = "\u0000";

/**
 * The two login password rules of spec 5 "锁定": per endpoint + source IP, 10 failures in
 * 5 minutes lock that pair for 5 minutes; per endpoint, 50 failures in 1 hour stop password
 * login for that endpoint for 1 hour. Only password logins consult this; session token
 * reconnects never do.
 *
 * @example
 * ```ts
 * const lockouts = new LoginLockouts();
 * if (lockouts.check(id, ip)) return refuse(); // no argon2 while locked
 * if (!(await pool.verify(phc, password))) lockouts.fail(id, ip);
 * ```
 */
export class LoginLockouts {
  #pair: FailureLimiter;
  #endpoint: FailureLimiter;

  constructor(opts: LockoutOptions = {}) {
    this.#pair = new FailureLimiter({ ...PAIR_RULE, ...opts });
    this.#endpoint = new FailureLimiter({ ...TOTAL_RULE, ...opts });
  }

  /** True when a password login for `endpointId` from `ip` must be refused without hashing. */
  check(endpointId: string, ip: string): boolean {
    return this.#endpoint.isLocked(endpointId) || this.#pair.isLocked(endpointId + SEP + ip);
  }

  /** When the later of the two locks ends, or null when neither applies; for Retry-After. */
  lockedUntil(endpointId: string, ip: string): number | null {
    return later(
      this.#endpoint.lockedUntil(endpointId),
      this.#pair.lockedUntil(endpointId + SEP + ip),
    );
  }

  /**
   * Counts a wrong login password under both rules (spec 5, and 6.6 for a wrong old password).
   * Returns true when this failure started a lock. Not counted while `check` is true.
   */
  fail(endpointId: string, ip: string): boolean {
    if (this.check(endpointId, ip)) return false;
    const pair = this.#pair.recordFailure(endpointId + SEP + ip);
    const total = this.#endpoint.recordFailure(endpointId);
    return pair || total;
  }

  /** Clears both kinds of lock and their counts for `endpointId` (spec 8 `unlock`). */
  unlock(endpointId: string): void {
    this.#endpoint.clear(endpointId);
    this.#pair.clearPrefix(endpointId + SEP);
  }
}

/**
 * The talk password rules of spec 5 "锁定": per sender + target, 10 failures in 5 minutes lock
 * the pair for 5 minutes; per target, 50 failures in 1 hour stop talk password checks for that
 * target for 1 hour (callers answer `rate_limited`).
 */
export class TalkLockouts {
  #pair: FailureLimiter;
  #target: FailureLimiter;

  constructor(opts: LockoutOptions = {}) {
    this.#pair = new FailureLimiter({ ...PAIR_RULE, ...opts });
    this.#target = new FailureLimiter({ ...TOTAL_RULE, ...opts });
  }

  /** True when `sender` may not try a talk password of `target` now. */
  check(sender: string, target: string): boolean {
    return this.#target.isLocked(target) || this.#pair.isLocked(target + SEP + sender);
  }

  /** Counts a wrong talk password; true when it started a lock. Not counted while locked. */
  fail(sender: string, target: string): boolean {
    if (this.check(sender, target)) return false;
    const pair = this.#pair.recordFailure(target + SEP + sender);
    const total = this.#target.recordFailure(target);
    return pair || total;
  }

  /** Clears every count and lock about `target`, when it changes its talk password (spec 5). */
  clearTarget(target: string): void {
    this.#target.clear(target);
    this.#pair.clearPrefix(target + SEP);
  }
}

/**
 * Per source IP, 10 failures in 5 minutes lock the IP for 5 minutes (spec 5 "锁定"). Use one
 * instance for admin login and wrong API tokens (spec 8), another for registration codes
 * (spec 6.9).
 */
export class IpLockouts {
  #ip: FailureLimiter;

  constructor(opts: LockoutOptions = {}) {
    this.#ip = new FailureLimiter({ ...PAIR_RULE, ...opts });
  }

  /** True when `ip` must be refused without checking the secret. */
  check(ip: string): boolean {
    return this.#ip.isLocked(ip);
  }

  /** When the lock on `ip` ends, or null; for Retry-After. */
  lockedUntil(ip: string): number | null {
    return this.#ip.lockedUntil(ip);
  }

  /** Counts a wrong secret from `ip`; true when it started a lock. */
  fail(ip: string): boolean {
    return this.#ip.recordFailure(ip);
  }
}

function later(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
