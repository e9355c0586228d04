import type {
  NodeLease,
  NodeLeaseArgs,
  NodeReapArgs,
  NodeReapResult,
  NodeReleaseArgs,
} from "../../ops/nodes.ts";
import { connCodePrefix } from "../../ops/recovery.ts";
import type { PgTx } from "../op.ts";

const SQL_LEASE =
  `INSERT INTO nodes (node_id, address, version, started_at, lease_until, renewed_at, connections)
  VALUES ($1, $2, $3, $4, $5, $4, $6)
  ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, version = excluded.version,
    connections = excluded.connections,
    started_at = CASE WHEN nodes.lease_until < excluded.renewed_at THEN excluded.started_at
                      ELSE nodes.started_at END,
    lease_until = excluded.lease_until, renewed_at = excluded.renewed_at
  RETURNING started_at, lease_until`;
const SQL_RELEASE = "DELETE FROM nodes WHERE node_id = $1";
// SKIP LOCKED: two nodes reaping at once take different dead nodes, never wait on each other.
const SQL_REAP = `DELETE FROM nodes WHERE node_id IN (
    SELECT node_id FROM nodes WHERE lease_until < $1 ORDER BY node_id LIMIT $2
    FOR UPDATE SKIP LOCKED)
  AND lease_until < $1 RETURNING node_id`;
const SQL_UNMARK_NODE = `UPDATE deliveries SET pushed_conn = NULL, updated_at = $1,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < $2 THEN $2 ELSE expire_at END
  WHERE state = 'pending' AND left(pushed_conn, length($3)) = $3`;

const SQL_OFFLINE_NODE = `UPDATE endpoints SET offline_since = GREATEST($1, online_since),
  online_node = NULL WHERE online_node = $2 RETURNING id`;
const SQL_GRACE_NOT_KEPT = `UPDATE deliveries SET expire_at = $1, updated_at = $2
  WHERE endpoint_id = $3 AND state = 'pending' AND keep = 0
    AND (expire_at IS NULL OR expire_at < $1)`;

/** `node.lease`, the twin of server/store/ops/nodes.ts. */
async function lease(t: PgTx, a: NodeLeaseArgs, now: number): Promise<NodeLease> {
  const rows = await t.q<{ started_at: number; lease_until: number }>(SQL_LEASE, [
    a.nodeId,
    a.address,
    a.version,
    now,
    now + a.leaseMs,
    a.connections ?? 0,
  ]);
  return { startedAt: Number(rows[0].started_at), leaseUntil: Number(rows[0].lease_until) };
}

/** `node.release`. */
async function release(t: PgTx, a: NodeReleaseArgs, _now: number): Promise<boolean> {
  return (await t.q<{ node_id: string }>(`${SQL_RELEASE} RETURNING node_id`, [a.nodeId]))
    .length > 0;
}

/** `node.reap`, the twin of server/store/ops/nodes.ts. */
async function reap(t: PgTx, a: NodeReapArgs, now: number): Promise<NodeReapResult> {
  const rows = await t.q<{ node_id: string }>(SQL_REAP, [now, a.limit]);
  const until = now + t.ctx.limits.graceMs;
  const nodes = rows.map((r) => r.node_id).sort();
  const offline: string[] = [];
  let deliveries = 0;
  for (const node of nodes) {
    deliveries += (await t.q(SQL_UNMARK_NODE, [now, until, connCodePrefix(node)])).count;
    const gone = await t.q<{ id: string }>(SQL_OFFLINE_NODE, [now, node]);
    for (const { id } of gone) {
      await t.q(SQL_GRACE_NOT_KEPT, [until, now, id]);
      offline.push(id);
    }
  }
  return { nodes, deliveries, offline: offline.sort() };
}

/** The node ops. */
export const pgNodeOps = {
  "node.lease": lease,
  "node.release": release,
  "node.reap": reap,
};
