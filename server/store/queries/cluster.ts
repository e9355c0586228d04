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
