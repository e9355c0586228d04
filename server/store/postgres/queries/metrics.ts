import type { OutcomeCount, WindowCounts } from "../../queries/metrics.ts";
import type { PgReader } from "../op.ts";

// The console's metrics history; the twin of server/store/queries/metrics.ts.

const SQL_SUBMITTED =
  "SELECT count(*) AS n FROM messages WHERE created_at > $1 AND created_at <= $2";
const SQL_OUTCOMES = `SELECT state, reason, count(*) AS n FROM deliveries
  WHERE updated_at > $1 AND updated_at <= $2 AND state <> 'pending' GROUP BY state, reason`;
const SQL_LATENCY_AT = `SELECT updated_at - send_at AS ms FROM deliveries
  WHERE state <> 'pending' AND state = 'accepted' AND updated_at > $1 AND updated_at <= $2
  ORDER BY ms LIMIT 1 OFFSET $3`;

/** Messages created and deliveries finished in (`from`, `to`]. */
export async function windowCounts(r: PgReader, from: number, to: number): Promise<WindowCounts> {
  const submitted = (await r.q<{ n: number }>(SQL_SUBMITTED, [from, to]))[0].n;
  const rows = await r.q<OutcomeCount>(SQL_OUTCOMES, [from, to]);
  return {
    submitted,
    outcomes: rows.map((o) => ({ state: o.state, reason: o.reason, n: o.n })),
  };
}

/** The send-to-ack time at each 0-based rank of the window, shortest first. */
export async function latencyAtRanks(
  r: PgReader,
  from: number,
  to: number,
  ranks: readonly number[],
): Promise<(number | null)[]> {
  const out: (number | null)[] = [];
  for (const rank of ranks) {
    out.push((await r.q<{ ms: number }>(SQL_LATENCY_AT, [from, to, rank]))[0]?.ms ?? null);
  }
  return out;
}
