import type { LockoutState, LockoutStateArgs } from "../../queries/lockouts.ts";
import type { PgReader } from "../op.ts";

const SQL_STATE = `SELECT key, locked_until FROM failure_counters
  WHERE key = ANY($1::text[]) AND locked_until > $2 ORDER BY key`;

/** `lockout.state`, the twin of server/store/queries/lockouts.ts. */
export async function lockoutState(r: PgReader, a: LockoutStateArgs): Promise<LockoutState[]> {
  if (a.keys.length === 0) return [];
  const rows = await r.q<{ key: string; locked_until: number }>(SQL_STATE, [a.keys, a.now]);
  return rows.map((x) => ({ key: x.key, lockedUntil: Number(x.locked_until) }));
}
