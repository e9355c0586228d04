import type { DatabaseSync } from "node:sqlite";

/** One locked key, as `lockout.state` answers. */
export interface LockoutState {
  key: string;
  /** When its lock ends (Unix ms). */
  lockedUntil: number;
}

/** Args of `lockout.state`. */
export interface LockoutStateArgs {
  keys: string[];
  now: number;
}

/** The keys of `keys` locked at `now`, with the ends of their locks, in key order. */
export function lockoutState(db: DatabaseSync, a: LockoutStateArgs): LockoutState[] {
  if (a.keys.length === 0) return [];
  const marks = a.keys.map(() => "?").join(", ");
  const rows = db.prepare(
    `SELECT key, locked_until FROM failure_counters WHERE key IN (${marks}) AND locked_until > ?
      ORDER BY key`,
  ).all(...a.keys, a.now) as { key: string; locked_until: number }[];
  return rows.map((r) => ({ key: r.key, lockedUntil: Number(r.locked_until) }));
}
