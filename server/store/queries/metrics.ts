import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// The console's metrics history (server/metrics/history.ts): rows that changed in one window.

const SQL_SUBMITTED = `SELECT count(*) AS n FROM messages WHERE created_at > ? AND created_at <= ?`;
const SQL_OUTCOMES = `SELECT state, reason, count(*) AS n FROM deliveries
  WHERE updated_at > ? AND updated_at <= ? AND state <> 'pending' GROUP BY state, reason`;
const SQL_LATENCY_AT = `SELECT updated_at - send_at AS ms FROM deliveries
  WHERE state <> 'pending' AND +state = 'accepted' AND updated_at > ? AND updated_at <= ?
  ORDER BY ms LIMIT 1 OFFSET ?`;

/** Deliveries that reached a final state in a window, by state and reason. */
export interface OutcomeCount {
  state: string;
  reason: string;
  n: number;
}

/** What happened in the window (`from`, `to`]: messages submitted, final delivery states. */
export interface WindowCounts {
  submitted: number;
  outcomes: OutcomeCount[];
}

/** Counts the messages created and the deliveries finished in (`from`, `to`]. */
export function windowCounts(db: DatabaseSync, from: number, to: number): WindowCounts {
  const submitted = Number((prepareCached(db, SQL_SUBMITTED).get(from, to) as { n: number }).n);
  const rows = prepareCached(db, SQL_OUTCOMES).all(from, to) as unknown as OutcomeCount[];
  return {
    submitted,
    outcomes: rows.map((r) => ({ state: r.state, reason: r.reason, n: Number(r.n) })),
  };
}

/**
 * The send-to-ack time (ms) at each 0-based rank among the deliveries accepted in (`from`, `to`],
 * shortest first; null where there is no such rank.
 */
export function latencyAtRanks(
  db: DatabaseSync,
  from: number,
  to: number,
  ranks: readonly number[],
): (number | null)[] {
  const stmt = prepareCached(db, SQL_LATENCY_AT);
  return ranks.map((rank) => (stmt.get(from, to, rank) as { ms: number } | undefined)?.ms ?? null);
}
