import {
  checkRules,
  LOCKOUT_PRUNE,
  type LockoutClearArgs,
  type LockoutFailArgs,
  type LockoutRow,
  nextCounter,
} from "../../ops/lockouts.ts";
import type { PgTx } from "../op.ts";

// The row is made first and then locked, so two nodes counting the same key wait on each other
// instead of both reading the old count.
const SQL_ENSURE = `INSERT INTO failure_counters (key, window_start, failures, locked_until,
  expires_at) VALUES ($1, $2, 0, 0, $2) ON CONFLICT (key) DO NOTHING`;
const SQL_GET = `SELECT window_start, failures, locked_until FROM failure_counters
  WHERE key = $1 FOR UPDATE`;
const SQL_PUT = `UPDATE failure_counters SET window_start = $2, failures = $3, locked_until = $4,
  expires_at = $5 WHERE key = $1`;
const SQL_PRUNE = `DELETE FROM failure_counters WHERE key IN (
  SELECT key FROM failure_counters WHERE expires_at <= $1 LIMIT ${LOCKOUT_PRUNE}
  FOR UPDATE SKIP LOCKED)`;
const SQL_DELETE = "DELETE FROM failure_counters WHERE key = $1";
const SQL_DELETE_PREFIX = "DELETE FROM failure_counters WHERE left(key, length($1)) = $1";

/** `lockout.fail`, the twin of server/store/ops/lockouts.ts. */
async function fail(t: PgTx, a: LockoutFailArgs, now: number): Promise<(number | null)[]> {
  checkRules(a.rules);
  await t.q(SQL_PRUNE, [now]);
  const out: (number | null)[] = [];
  // Keys in order, so two nodes lock the rows of one attempt in the same order.
  const order = a.rules.map((r, i) => [r, i] as const).sort(([x], [y]) =>
    x.key < y.key ? -1 : x.key > y.key ? 1 : 0
  );
  for (const [rule, i] of order) {
    // A fresh row (failures 0, window at now) counts as a window just begun.
    await t.q(SQL_ENSURE, [rule.key, now]);
    const rows = await t.q<LockoutRow>(SQL_GET, [rule.key]);
    const row = rows.length === 0 ? undefined : {
      window_start: Number(rows[0].window_start),
      failures: Number(rows[0].failures),
      locked_until: Number(rows[0].locked_until),
    };
    const next = nextCounter(row, rule, now);
    if (next === null) {
      out[i] = null;
      continue;
    }
    const r = next.row;
    await t.q(SQL_PUT, [rule.key, r.window_start, r.failures, r.locked_until, next.expiresAt]);
    out[i] = next.lockedUntil === 0 ? null : next.lockedUntil;
  }
  return out;
}

/** `lockout.clear`, the twin of server/store/ops/lockouts.ts. */
async function clear(t: PgTx, a: LockoutClearArgs, _now: number): Promise<number> {
  let n = 0;
  for (const key of a.keys) n += (await t.q(SQL_DELETE, [key])).count;
  for (const p of a.prefixes) {
    if (p === "") throw new RangeError("lockout.clear: an empty prefix would clear everything");
    n += (await t.q(SQL_DELETE_PREFIX, [p])).count;
  }
  return n;
}

/** The lockout ops. */
export const pgLockoutOps = {
  "lockout.fail": fail,
  "lockout.clear": clear,
};
