import type { NodeLease, NodeLeaseArgs, NodeReleaseArgs } from "../../ops/nodes.ts";
import type { PgTx } from "../op.ts";

const SQL_LEASE =
  `INSERT INTO nodes (node_id, address, version, started_at, lease_until, renewed_at)
  VALUES ($1, $2, $3, $4, $5, $4)
  ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, version = excluded.version,
    started_at = CASE WHEN nodes.lease_until < excluded.renewed_at THEN excluded.started_at
                      ELSE nodes.started_at END,
    lease_until = excluded.lease_until, renewed_at = excluded.renewed_at
  RETURNING started_at, lease_until`;
const SQL_RELEASE = "DELETE FROM nodes WHERE node_id = $1";

/** `node.lease`, the twin of server/store/ops/nodes.ts. */
async function lease(t: PgTx, a: NodeLeaseArgs, now: number): Promise<NodeLease> {
  const rows = await t.q<{ started_at: number; lease_until: number }>(SQL_LEASE, [
    a.nodeId,
    a.address,
    a.version,
    now,
    now + a.leaseMs,
  ]);
  return { startedAt: Number(rows[0].started_at), leaseUntil: Number(rows[0].lease_until) };
}

/** `node.release`. */
async function release(t: PgTx, a: NodeReleaseArgs, _now: number): Promise<boolean> {
  return (await t.q<{ node_id: string }>(`${SQL_RELEASE} RETURNING node_id`, [a.nodeId]))
    .length > 0;
}

/** The node ops. */
export const pgNodeOps = {
  "node.lease": lease,
  "node.release": release,
};
