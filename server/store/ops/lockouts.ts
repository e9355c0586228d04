// Shared failure counters (issue 30 item 4): in a cluster the lockouts of spec 5 "锁定" count in
// the store, so guesses spread over several nodes count once. A row is one rule's key (the
// server builds keys such as `["login","pair","alice","203.0.113.7"]`); its window is fixed,
// starting at the first failure it counts (docs/DEVIATIONS.md: memory slides it).
import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

/** One rule a failure counts under. */
export interface LockoutRule {
  /** The rule's key. */
  key: string;
  /** Failures within the window that lock the key (> 0). */
  max: number;
  /** Length of the window (ms, > 0). */
  windowMs: number;
  /** How long a lock lasts (ms, > 0). */
  lockMs: number;
}

/** Args of `lockout.fail`. */
export interface LockoutFailArgs {
  rules: LockoutRule[];
}

/** Args of `lockout.clear`. */
export interface LockoutClearArgs {
  /** Keys forgotten. */
  keys: string[];
  /** Every key starting with one of these is forgotten too. */
  prefixes: string[];
}

/** One counter row as the ops read it. */
export interface LockoutRow {
  window_start: number;
  failures: number;
  locked_until: number;
}

/** How many expired rows one `lockout.fail` removes on the way. */
export const LOCKOUT_PRUNE = 32;

const SQL_GET = "SELECT window_start, failures, locked_until FROM failure_counters WHERE key = ?";
const SQL_PUT =
  `INSERT INTO failure_counters (key, window_start, failures, locked_until, expires_at)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start,
    failures = excluded.failures, locked_until = excluded.locked_until,
    expires_at = excluded.expires_at`;
const SQL_PRUNE = `DELETE FROM failure_counters WHERE key IN (
  SELECT key FROM failure_counters WHERE expires_at <= ? LIMIT ${LOCKOUT_PRUNE})`;
const SQL_DELETE = "DELETE FROM failure_counters WHERE key = ?";
const SQL_DELETE_PREFIX = "DELETE FROM failure_counters WHERE substr(key, 1, length(?)) = ?";

/**
 * The next state of one counter after a failure at `now`: `null` when the key is locked (a failure
 * while locked is not counted), else the row to write and the end of the lock it started (0 when
 * none). After a lock ends, or once the window is over, the count starts from zero.
 */
export function nextCounter(
  row: LockoutRow | undefined,
  rule: LockoutRule,
  now: number,
): { row: LockoutRow; expiresAt: number; lockedUntil: number } | null {
  if (row && row.locked_until > now) return null;
  const fresh = !row || row.locked_until !== 0 || row.window_start + rule.windowMs <= now;
  const windowStart = fresh ? now : row.window_start;
  const failures = fresh ? 1 : row.failures + 1;
  if (failures >= rule.max) {
    const until = now + rule.lockMs;
    return {
      row: { window_start: now, failures: 0, locked_until: until },
      expiresAt: until,
      lockedUntil: until,
    };
  }
  return {
    row: { window_start: windowStart, failures, locked_until: 0 },
    expiresAt: windowStart + rule.windowMs,
    lockedUntil: 0,
  };
}

/** Throws a RangeError unless every rule has a key and positive numbers. */
export function checkRules(rules: readonly LockoutRule[]): void {
  for (const r of rules) {
    if (
      typeof r.key !== "string" || r.key === "" ||
      !(r.max > 0 && r.windowMs > 0 && r.lockMs > 0)
    ) {
      throw new RangeError("lockout.fail: a rule needs a key and positive max, windowMs, lockMs");
    }
  }
}

/**
 * `lockout.fail`: counts one failure under every rule at once. Returns, per rule, when the lock
 * this failure started ends, or null when it started none (below the limit, or already locked).
 */
export function fail(db: DatabaseSync, a: LockoutFailArgs, now: number): (number | null)[] {
  checkRules(a.rules);
  prepareCached(db, SQL_PRUNE).run(now);
  return a.rules.map((rule) => {
    const row = prepareCached(db, SQL_GET).get(rule.key) as LockoutRow | undefined;
    const next = nextCounter(row, rule, now);
    if (next === null) return null;
    const r = next.row;
    prepareCached(db, SQL_PUT).run(
      rule.key,
      r.window_start,
      r.failures,
      r.locked_until,
      next.expiresAt,
    );
    return next.lockedUntil === 0 ? null : next.lockedUntil;
  });
}

/** `lockout.clear`: forgets counts and locks; returns how many rows went. */
export function clear(db: DatabaseSync, a: LockoutClearArgs, _now: number): number {
  let n = 0;
  for (const key of a.keys) n += Number(prepareCached(db, SQL_DELETE).run(key).changes);
  for (const p of a.prefixes) {
    if (p === "") throw new RangeError("lockout.clear: an empty prefix would clear everything");
    n += Number(prepareCached(db, SQL_DELETE_PREFIX).run(p, p).changes);
  }
  return n;
}

/** The lockout ops, merged into the writer's registry in `mod.ts`. */
export const lockoutOps = {
  "lockout.fail": fail,
  "lockout.clear": clear,
};
