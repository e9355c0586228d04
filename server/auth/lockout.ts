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
  /** Attempts reserved by {@linkcode FailureLimiter.reserve} and not yet settled. */
  inFlight: number;
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
    return true;
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
    if (entry.inFlight === 0) this.#entries.delete(key);
    else Object.assign(entry, { failures: [], lockedUntil: 0 });
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

/**
 * One secret check that holds a slot under every rule that applies to it. Settle it exactly once:
 * `fail()` when the secret was wrong, `release()` otherwise (right secret, or an internal error
 * that checked nothing). Later calls do nothing.
 */
export interface Attempt {
  /** Counts the wrong secret under every rule; true when it started a lock. */
  fail(): boolean;
  /** Frees the slot without counting a failure. */
  release(): void;
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
 * Reserves a slot for one attempt under every (limiter, key) pair at once, or none when any of
 * them is locked or full (issue 18: no more checks than the rule allows, even concurrently).
 */
function begin(rules: ReadonlyArray<readonly [FailureLimiter, string]>): Attempt | null {
  if (!rules.every(([limiter, key]) => limiter.hasRoom(key))) return null;
  for (const [limiter, key] of rules) limiter.reserve(key);
  let settled = false;
  const settle = (failed: boolean): boolean => {
    if (settled) return false;
    settled = true;
    let locked = false;
    for (const [limiter, key] of rules) locked = limiter.settle(key, failed) || locked;
    return locked;
  };
  return { fail: () => settle(true), release: () => void settle(false) };
}

/**
 * The two login password rules of spec 5 "锁定": per endpoint + source IP, 10 failures in
 * 5 minutes lock that pair for 5 minutes; per endpoint, 50 failures in 1 hour stop password
 * login for that endpoint for 1 hour. Only password logins consult this; session token
 * reconnects never do.
 *
 * @example
 * ```ts
 * const lockouts = new LoginLockouts();
 * const attempt = lockouts.begin(id, ip);
 * if (attempt === null) return refuse(); // locked or full: no argon2
 * if (await pool.verify(phc, password)) attempt.release();
 * else attempt.fail();
 * ```
 */
export class LoginLockouts {
  #pair: FailureLimiter;
  #endpoint: FailureLimiter;

  constructor(opts: LockoutOptions = {}) {
    this.#pair = new FailureLimiter({ ...PAIR_RULE, ...opts });
    this.#endpoint = new FailureLimiter({ ...TOTAL_RULE, ...opts });
  }

  /** True when a password login for `endpointId` from `ip` is locked. */
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
   * Starts one password check for `endpointId` from `ip` (spec 5, and 6.6 for an old password),
   * or returns null when it must be refused without hashing: locked, or as many checks in flight
   * as failures would still be allowed.
   */
  begin(endpointId: string, ip: string): Attempt | null {
    return begin([[this.#pair, endpointId + SEP + ip], [this.#endpoint, endpointId]]);
  }

  /** Counts one wrong password checked without {@linkcode begin}; true when it started a lock. */
  fail(endpointId: string, ip: string): boolean {
    return this.begin(endpointId, ip)?.fail() ?? false;
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

  /** Starts one talk password check, or null when it must be answered `rate_limited`. */
  begin(sender: string, target: string): Attempt | null {
    return begin([[this.#pair, target + SEP + sender], [this.#target, target]]);
  }

  /** Counts one wrong talk password checked without {@linkcode begin}; true when it locked. */
  fail(sender: string, target: string): boolean {
    return this.begin(sender, target)?.fail() ?? false;
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

  /** True when `ip` is locked. */
  check(ip: string): boolean {
    return this.#ip.isLocked(ip);
  }

  /** When the lock on `ip` ends, or null; for Retry-After. */
  lockedUntil(ip: string): number | null {
    return this.#ip.lockedUntil(ip);
  }

  /** Starts one secret check from `ip`, or null when it must be refused without checking. */
  begin(ip: string): Attempt | null {
    return begin([[this.#ip, ip]]);
  }

  /** Counts a wrong secret checked without {@linkcode begin}; true when it started a lock. */
  fail(ip: string): boolean {
    return this.begin(ip)?.fail() ?? false;
  }
}

function later(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
