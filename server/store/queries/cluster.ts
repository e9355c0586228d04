import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// The bounded poll of a cluster node (issue 30): NATS only notifies, so each node also asks the
// store now and then which of its endpoints have work waiting, and a lost notification only
// delays a push until that poll.

const SQL_WAITING_DELIVERIES = `SELECT DISTINCT endpoint_id FROM deliveries
  WHERE endpoint_id IN (SELECT value FROM json_each(?)) AND state = 'pending'
    AND pushed_conn IS NULL AND (expire_at IS NULL OR expire_at > ?)
  ORDER BY endpoint_id`;
const SQL_WAITING_RECEIPTS = `SELECT DISTINCT sender_id FROM receipts
  WHERE sender_id IN (SELECT value FROM json_each(?)) AND acked = 0 ORDER BY sender_id`;

const SQL_LOGINS = `SELECT id, enabled, online_since, closed_through, closed_reason
  FROM endpoints WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`;

/**
 * What the store says of an endpoint a cluster node holds a connection of (query
 * `cluster.logins`): its latest login revision, whether it is enabled, and the last admin close
 * (migration 11). An endpoint that is not answered was deleted.
 */
export interface ClusterLogin {
  id: string;
  enabled: boolean;
  /** The latest login revision (`online_since`); null when it never logged in. */
  online_since: number | null;
  /** Logins at or before this revision were closed by an admin (`closed_reason`). */
  closed_through: number | null;
  closed_reason: "disabled" | "password_reset" | "kick" | null;
}

/** The rows of `cluster.logins` from either engine. */
export function clusterLoginRows(rows: readonly Record<string, unknown>[]): ClusterLogin[] {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    id: String(r.id),
    enabled: Number(r.enabled) === 1,
    online_since: num(r.online_since),
    closed_through: num(r.closed_through),
    closed_reason: (r.closed_reason ?? null) as ClusterLogin["closed_reason"],
  }));
}

/** Of `ids`, the stored login state of those that exist (query `cluster.logins`). */
export function clusterLogins(db: DatabaseSync, ids: readonly string[]): ClusterLogin[] {
  if (ids.length === 0) return [];
  return clusterLoginRows(
    prepareCached(db, SQL_LOGINS).all(JSON.stringify(ids)) as Record<string, unknown>[],
  );
}

/** Which of the asked endpoints have work waiting in the store. */
export interface WaitingWork {
  /** Endpoints with pending deliveries not pushed to any connection (and not expired). */
  deliveries: string[];
  /** Endpoints (as senders) with receipts they have not acknowledged. */
  receipts: string[];
}

/** Of `ids`, the endpoints with undelivered deliveries or unacknowledged receipts at `now`. */
export function waitingWork(db: DatabaseSync, ids: readonly string[], now: number): WaitingWork {
  if (ids.length === 0) return { deliveries: [], receipts: [] };
  const json = JSON.stringify(ids);
  const d = prepareCached(db, SQL_WAITING_DELIVERIES).all(json, now) as { endpoint_id: string }[];
  const r = prepareCached(db, SQL_WAITING_RECEIPTS).all(json) as { sender_id: string }[];
  return { deliveries: d.map((x) => x.endpoint_id), receipts: r.map((x) => x.sender_id) };
}
