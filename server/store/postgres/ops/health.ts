import { HEALTH_PROBE_KEY, type ProbeArgs } from "../../ops/health.ts";
import type { PgTx } from "../op.ts";

const SQL_PROBE = `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;

/** `health.probe` (spec 4.3, 7.8): one real row write, so readiness fails when writes fail. */
export async function probe(t: PgTx, args: ProbeArgs, now: number): Promise<void> {
  await t.q(SQL_PROBE, [HEALTH_PROBE_KEY, args.token, now]);
}

/** The health ops. */
export const pgHealthOps = {
  "health.probe": probe,
};
