import { type ClusterLogin, clusterLoginRows, type WaitingWork } from "../../queries/cluster.ts";
import type { PgReader } from "../op.ts";

// The twin of server/store/queries/cluster.ts: the bounded poll of a cluster node (issue 30).

const SQL_WAITING_DELIVERIES = `SELECT DISTINCT endpoint_id FROM deliveries
  WHERE endpoint_id = ANY($1::text[]) AND state = 'pending'
    AND pushed_conn IS NULL AND (expire_at IS NULL OR expire_at > $2)
  ORDER BY endpoint_id`;
const SQL_WAITING_RECEIPTS = `SELECT DISTINCT sender_id FROM receipts
  WHERE sender_id = ANY($1::text[]) AND acked = 0 ORDER BY sender_id`;

/** `cluster.waiting`. */
export async function waitingWork(
  r: PgReader,
  ids: readonly string[],
  now: number,
): Promise<WaitingWork> {
  if (ids.length === 0) return { deliveries: [], receipts: [] };
  const d = await r.q<{ endpoint_id: string }>(SQL_WAITING_DELIVERIES, [[...ids], now]);
  const rc = await r.q<{ sender_id: string }>(SQL_WAITING_RECEIPTS, [[...ids]]);
  return { deliveries: d.map((x) => x.endpoint_id), receipts: rc.map((x) => x.sender_id) };
}

const SQL_LOGINS = `SELECT id, enabled, online_since, closed_through, closed_reason
  FROM endpoints WHERE id = ANY($1::text[]) ORDER BY id`;

/** `cluster.logins`. */
export async function clusterLogins(r: PgReader, ids: readonly string[]): Promise<ClusterLogin[]> {
  if (ids.length === 0) return [];
  return clusterLoginRows(await r.q<Record<string, unknown>>(SQL_LOGINS, [[...ids]]));
}
