import { FailureLimiter, type UnlockReason } from "./failure_limiter.ts";

export {
  FailureLimiter,
  type FailureLimiterOptions,
  type UnlockReason,
} from "./failure_limiter.ts";

/** The lockout families of spec 5 "锁定", as logged and counted. */
export type LockKind = "login" | "talk" | "admin" | "registration";
/** Which rule of a family locked: per pair, per endpoint, per talk target, per IP. */
export type LockRule = "pair" | "endpoint" | "target" | "ip" | "account";

/** Who a lockout event is about; only the fields that apply are set. Never a secret. */
export interface LockSubject {
  endpoint?: string;
  ip?: string;
  sender?: string;
  target?: string;
  /** The admin account (`admin`), for the per-account rule of the admin login (issue 28). */
  account?: string;
}

/**
 * Receives what the lockouts see, for logs and metrics (issue 18): every failed or refused
 * secret check, and every lock start and end.
 */
export interface LockoutEvents {
  /**
   * A secret check failed (`reason` from the caller, such as `wrong_password`), or was refused
   * unchecked: `locked`, or `busy` when as many checks are in flight as failures are left.
   */
  failure(kind: LockKind, reason: string, who: LockSubject): void;
  lockStarted(kind: LockKind, rule: LockRule, who: LockSubject, until: number): void;
  lockEnded(kind: LockKind, rule: LockRule, who: LockSubject, reason: UnlockReason): void;
}

/** One rule a failure counts under in the store, as `lockout.fail` takes it. */
export interface SharedRule {
  key: string;
  max: number;
  windowMs: number;
  lockMs: number;
}

/**
 * The failure counters of a cluster (issue 30 item 4), kept in the store so that guesses spread
 * over several nodes count once. The methods never reject: a store error is logged by the
 * implementation and the node falls back on its own counts for that attempt.
 */
export interface SharedCounters {
  /** The keys of `keys` locked now, with the ends of their locks. */
  state(keys: string[]): Promise<Map<string, number>>;
  /** Counts one failure under every rule; per rule, the end of a lock it started, or null. */
  fail(rules: SharedRule[]): Promise<(number | null)[]>;
  /** Forgets the counts and locks of `keys` and of every key under one of `prefixes`. */
  clear(keys: string[], prefixes: string[]): Promise<void>;
}

/** Options shared by the lockout bundles below. */
export interface LockoutOptions {
  /** The cluster's shared counters; without them every count is this process's own. */
  shared?: SharedCounters;
  /** Milliseconds now; defaults to `Date.now`. */
  clock?: () => number;
  /** Most keys each underlying limiter remembers. Default 100000. */
  maxKeys?: number;
  /** Where failures and lock starts and ends are reported; default nowhere. */
  events?: LockoutEvents;
}

/**
 * One secret check that holds a slot under every rule that applies to it. Settle it exactly once:
 * `fail()` when the secret was wrong, `release()` otherwise (right secret, or an internal error
 * that checked nothing). Later calls do nothing.
 */
export interface Attempt {
  /** Counts the wrong secret under every rule and reports `reason`; true when it locked. */
  fail(reason?: string): boolean;
  /** Frees the slot without counting a failure. */
  release(): void;
  /**
   * Resolves once a failure is counted in the cluster's shared counters (at once without them),
   * so the answer to a wrong guess goes out only after every node can see it.
   */
  done(): Promise<void>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** 10 failures in 5 minutes lock for 5 minutes (spec 5: per pair and per IP). */
const PAIR_RULE = { maxFailures: 10, windowMs: 5 * MINUTE, lockMs: 5 * MINUTE };
/** 50 failures in 1 hour lock for 1 hour (spec 5: per endpoint, per talk target). */
const TOTAL_RULE = { maxFailures: 50, windowMs: HOUR, lockMs: HOUR };

// Ids and IPs never contain NUL, so "a\0" cannot be the prefix of a key that belongs to "ab".
const SEP = "\u0000";

function splitKey(key: string): [string, string] {
  const i = key.indexOf(SEP);
  return [key.slice(0, i), key.slice(i + 1)];
}

/** A limiter with the rule and names its keys have in the shared counters. */
interface RuleLimiter {
  limiter: FailureLimiter;
  rule: typeof PAIR_RULE;
  kind: LockKind;
  name: LockRule;
}

/** The key of a limiter key in the shared counters: a JSON array, so prefixes cannot collide. */
function storeKey(r: RuleLimiter, key: string): string {
  return JSON.stringify([r.kind, r.name, ...key.split(SEP)]);
}

/** The prefix of every shared key of `r` whose first part is `first`. */
function storePrefix(r: RuleLimiter, first: string): string {
  return JSON.stringify([r.kind, r.name, first]).slice(0, -1) + ",";
}

/**
 * Brings the local locks of `rules` in line with the shared counters: a key locked there is
 * locked here until the same time, one not locked there is not locked here (an admin unlock on
 * another node reaches this one at its next attempt).
 */
async function refresh(
  shared: SharedCounters | undefined,
  rules: ReadonlyArray<readonly [RuleLimiter, string]>,
): Promise<void> {
  if (!shared) return;
  const state = await shared.state(rules.map(([r, key]) => storeKey(r, key)));
  for (const [r, key] of rules) {
    const until = state.get(storeKey(r, key));
    if (until !== undefined) r.limiter.imposeLock(key, until);
    else if (r.limiter.isLocked(key)) r.limiter.clear(key);
  }
}

/** A limiter for one rule whose lock starts and ends go to `opts.events`. */
function ruleLimiter(
  rule: typeof PAIR_RULE,
  opts: LockoutOptions,
  kind: LockKind,
  name: LockRule,
  who: (key: string) => LockSubject,
): RuleLimiter {
  const ev = opts.events;
  const limiter = new FailureLimiter({
    ...rule,
    clock: opts.clock,
    maxKeys: opts.maxKeys,
    onLock: ev && ((key, until) => ev.lockStarted(kind, name, who(key), until)),
    onUnlock: ev && ((key, reason) => ev.lockEnded(kind, name, who(key), reason)),
  });
  return { limiter, rule, kind, name };
}

/**
 * Reserves a slot for one attempt under every (limiter, key) pair at once, or none when any of
 * them is locked or full (issue 18: no more checks than the rule allows, even concurrently).
 */
function begin(
  rules: ReadonlyArray<readonly [RuleLimiter, string]>,
  kind: LockKind,
  who: LockSubject,
  events: LockoutEvents | undefined,
  shared?: SharedCounters,
): Attempt | null {
  if (!rules.every(([r, key]) => r.limiter.hasRoom(key))) {
    const locked = rules.some(([r, key]) => r.limiter.isLocked(key));
    events?.failure(kind, locked ? "locked" : "busy", who);
    return null;
  }
  for (const [r, key] of rules) r.limiter.reserve(key);
  let settled = false;
  let written: Promise<void> = Promise.resolve();
  const settle = (failed: boolean): boolean => {
    if (settled) return false;
    settled = true;
    let locked = false;
    for (const [r, key] of rules) locked = r.limiter.settle(key, failed) || locked;
    if (failed && shared) {
      const counted = rules.map(([r, key]) => ({ key: storeKey(r, key), ...toShared(r.rule) }));
      written = shared.fail(counted).then((ends) => {
        ends.forEach((until, i) => {
          if (until !== null) rules[i][0].limiter.imposeLock(rules[i][1], until, true);
        });
      });
    }
    return locked;
  };
  return {
    fail: (reason = "wrong_secret") => {
      if (!settled) events?.failure(kind, reason, who);
      return settle(true);
    },
    release: () => void settle(false),
    done: () => written,
  };
}

function toShared(rule: typeof PAIR_RULE): Omit<SharedRule, "key"> {
  return { max: rule.maxFailures, windowMs: rule.windowMs, lockMs: rule.lockMs };
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
 * else attempt.fail("wrong_password");
 * ```
 */
export class LoginLockouts {
  #pair: RuleLimiter;
  #endpoint: RuleLimiter;
  #events: LockoutEvents | undefined;
  #shared: SharedCounters | undefined;

  constructor(opts: LockoutOptions = {}) {
    this.#pair = ruleLimiter(PAIR_RULE, opts, "login", "pair", (key) => {
      const [endpoint, ip] = splitKey(key);
      return { endpoint, ip };
    });
    this.#endpoint = ruleLimiter(TOTAL_RULE, opts, "login", "endpoint", (endpoint) => ({
      endpoint,
    }));
    this.#events = opts.events;
    this.#shared = opts.shared;
  }

  #rules(endpointId: string, ip: string): [RuleLimiter, string][] {
    return [[this.#pair, endpointId + SEP + ip], [this.#endpoint, endpointId]];
  }

  /** True when a password login for `endpointId` from `ip` is locked. */
  check(endpointId: string, ip: string): boolean {
    return this.#endpoint.limiter.isLocked(endpointId) ||
      this.#pair.limiter.isLocked(endpointId + SEP + ip);
  }

  /** When the later of the two locks ends, or null when neither applies; for Retry-After. */
  lockedUntil(endpointId: string, ip: string): number | null {
    return later(
      this.#endpoint.limiter.lockedUntil(endpointId),
      this.#pair.limiter.lockedUntil(endpointId + SEP + ip),
    );
  }

  /** {@linkcode lockedUntil} after reading the cluster's shared counters (issue 30). */
  async lockedUntilShared(endpointId: string, ip: string): Promise<number | null> {
    await refresh(this.#shared, this.#rules(endpointId, ip));
    return this.lockedUntil(endpointId, ip);
  }

  /**
   * Starts one password check for `endpointId` from `ip` (spec 5, and 6.6 for an old password),
   * or returns null when it must be refused without hashing: locked, or as many checks in flight
   * as failures would still be allowed. Counts of this process only; see {@linkcode acquire}.
   */
  begin(endpointId: string, ip: string): Attempt | null {
    return begin(
      this.#rules(endpointId, ip),
      "login",
      { endpoint: endpointId, ip },
      this.#events,
      this.#shared,
    );
  }

  /**
   * {@linkcode begin} after reading the cluster's shared counters, so a lock reached through
   * other nodes holds here too (issue 30); the same as `begin` without shared counters.
   */
  async acquire(endpointId: string, ip: string): Promise<Attempt | null> {
    // Without shared counters the slot is taken at once, before any other check can interleave.
    if (this.#shared) await refresh(this.#shared, this.#rules(endpointId, ip));
    return this.begin(endpointId, ip);
  }

  /** Counts one wrong password checked without {@linkcode begin}; true when it started a lock. */
  fail(endpointId: string, ip: string, reason = "wrong_password"): boolean {
    return this.begin(endpointId, ip)?.fail(reason) ?? false;
  }

  /** Clears both kinds of lock and their counts for `endpointId` (spec 8 `unlock`). */
  unlock(endpointId: string): Promise<void> {
    this.#endpoint.limiter.clear(endpointId);
    this.#pair.limiter.clearPrefix(endpointId + SEP);
    return this.#shared?.clear(
      [storeKey(this.#endpoint, endpointId)],
      [storePrefix(this.#pair, endpointId)],
    ) ?? Promise.resolve();
  }

  /** Ends the locks whose time is over and reports them. */
  sweep(): void {
    this.#pair.limiter.sweep();
    this.#endpoint.limiter.sweep();
  }
}

/**
 * The talk password rules of spec 5 "锁定": per sender + target, 10 failures in 5 minutes lock
 * the pair for 5 minutes; per target, 50 failures in 1 hour stop talk password checks for that
 * target for 1 hour (callers answer `rate_limited`).
 */
export class TalkLockouts {
  #pair: RuleLimiter;
  #target: RuleLimiter;
  #events: LockoutEvents | undefined;
  #shared: SharedCounters | undefined;

  constructor(opts: LockoutOptions = {}) {
    this.#pair = ruleLimiter(PAIR_RULE, opts, "talk", "pair", (key) => {
      const [target, sender] = splitKey(key);
      return { sender, target };
    });
    this.#target = ruleLimiter(TOTAL_RULE, opts, "talk", "target", (target) => ({ target }));
    this.#events = opts.events;
    this.#shared = opts.shared;
  }

  #rules(sender: string, target: string): [RuleLimiter, string][] {
    return [[this.#pair, target + SEP + sender], [this.#target, target]];
  }

  /** True when `sender` may not try a talk password of `target` now. */
  check(sender: string, target: string): boolean {
    return this.#target.limiter.isLocked(target) ||
      this.#pair.limiter.isLocked(target + SEP + sender);
  }

  /** Starts one talk password check, or null when it must be answered `rate_limited`. */
  begin(sender: string, target: string): Attempt | null {
    return begin(
      this.#rules(sender, target),
      "talk",
      { sender, target },
      this.#events,
      this.#shared,
    );
  }

  /** {@linkcode begin} after reading the cluster's shared counters (issue 30). */
  async acquire(sender: string, target: string): Promise<Attempt | null> {
    if (this.#shared) await refresh(this.#shared, this.#rules(sender, target));
    return this.begin(sender, target);
  }

  /** Counts one wrong talk password checked without {@linkcode begin}; true when it locked. */
  fail(sender: string, target: string, reason = "wrong_password"): boolean {
    return this.begin(sender, target)?.fail(reason) ?? false;
  }

  /** Clears every count and lock about `target`, when it changes its talk password (spec 5). */
  clearTarget(target: string): Promise<void> {
    this.#target.limiter.clear(target);
    this.#pair.limiter.clearPrefix(target + SEP);
    return this.#shared?.clear(
      [storeKey(this.#target, target)],
      [storePrefix(this.#pair, target)],
    ) ?? Promise.resolve();
  }

  /** Ends the locks whose time is over and reports them. */
  sweep(): void {
    this.#pair.limiter.sweep();
    this.#target.limiter.sweep();
  }
}

/** Options of {@linkcode IpLockouts}. */
export interface IpLockoutOptions extends LockoutOptions {
  /** What the secret is, for the events: the admin password or API tokens, or registration. */
  kind: "admin" | "registration";
  /**
   * Adds a per-account rule beside the per-IP one, for the attempts that name an account
   * (issue 28, OWASP ASVS 2.2.1: guesses spread over many addresses still lock the account).
   */
  accountRule?: boolean;
}

/**
 * The per-account rule of the admin login (issue 28), modelled on spec 5's per-endpoint rule:
 * 50 wrong passwords within 1 hour, from any addresses, lock password login for 1 hour. API
 * tokens and sessions already open are not affected; a restart clears it, like every lock.
 */
const ACCOUNT_RULE = TOTAL_RULE;

/**
 * Per source IP, 10 failures in 5 minutes lock the IP for 5 minutes (spec 5 "锁定"). Use one
 * instance for admin login and wrong API tokens (spec 8), another for registration codes
 * (spec 6.9).
 */
export class IpLockouts {
  #ip: RuleLimiter;
  #account: RuleLimiter | null;
  #kind: "admin" | "registration";
  #events: LockoutEvents | undefined;
  #shared: SharedCounters | undefined;
  #lastAccountLock: number | null = null;

  constructor(opts: IpLockoutOptions) {
    this.#ip = ruleLimiter(PAIR_RULE, opts, opts.kind, "ip", (ip) => ({ ip }));
    const ev = opts.events;
    this.#account = opts.accountRule
      ? {
        limiter: new FailureLimiter({
          ...ACCOUNT_RULE,
          clock: opts.clock,
          maxKeys: 16,
          onLock: (account, until) => {
            this.#lastAccountLock = (opts.clock ?? Date.now)();
            ev?.lockStarted(opts.kind, "account", { account }, until);
          },
          onUnlock: ev &&
            ((account, reason) => ev.lockEnded(opts.kind, "account", { account }, reason)),
        }),
        rule: ACCOUNT_RULE,
        kind: opts.kind,
        name: "account",
      }
      : null;
    this.#kind = opts.kind;
    this.#events = opts.events;
    this.#shared = opts.shared;
  }

  #rules(ip: string, account?: string): [RuleLimiter, string][] {
    return account !== undefined && this.#account !== null
      ? [[this.#ip, ip], [this.#account, account]]
      : [[this.#ip, ip]];
  }

  /** True when `ip` is locked. */
  check(ip: string): boolean {
    return this.#ip.limiter.isLocked(ip);
  }

  /** When the lock on `ip` (or on `account`, if given) ends, or null; for Retry-After. */
  lockedUntil(ip: string, account?: string): number | null {
    const byAccount = account === undefined ? null : this.accountLockedUntil(account);
    return later(this.#ip.limiter.lockedUntil(ip), byAccount);
  }

  /** When the per-account lock of `account` ends, or null when it is not locked. */
  accountLockedUntil(account: string): number | null {
    return this.#account?.limiter.lockedUntil(account) ?? null;
  }

  /** When the per-account rule last locked an account (ms), or null: for the console. */
  get lastAccountLock(): number | null {
    return this.#lastAccountLock;
  }

  /**
   * Starts one secret check from `ip` (and for `account`, under the per-account rule when this
   * instance has one), or null when it must be refused without checking.
   */
  begin(ip: string, account?: string): Attempt | null {
    const rules = this.#rules(ip, account);
    const who: LockSubject = rules.length > 1 ? { ip, account } : { ip };
    return begin(rules, this.#kind, who, this.#events, this.#shared);
  }

  /** Reads the cluster's shared counter of `account` into the local lock (for the console). */
  refreshAccount(account: string): Promise<void> {
    return this.#account === null
      ? Promise.resolve()
      : refresh(this.#shared, [[this.#account, account]]);
  }

  /** Reads the cluster's shared counters of `ip` (and `account`) into the local locks. */
  refresh(ip: string, account?: string): Promise<void> {
    return refresh(this.#shared, this.#rules(ip, account));
  }

  /** {@linkcode begin} after reading the cluster's shared counters (issue 30). */
  async acquire(ip: string, account?: string): Promise<Attempt | null> {
    if (this.#shared) await this.refresh(ip, account);
    return this.begin(ip, account);
  }

  /** Counts a wrong secret checked without {@linkcode begin}; true when it started a lock. */
  fail(ip: string, reason = "wrong_secret"): boolean {
    return this.begin(ip)?.fail(reason) ?? false;
  }

  /** Ends the locks whose time is over and reports them. */
  sweep(): void {
    this.#ip.limiter.sweep();
    this.#account?.limiter.sweep();
  }
}

function later(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
