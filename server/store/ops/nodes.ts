// Node leases (issue 30 item 3): each node of a cluster renews a row in `nodes` while it runs, so
// the others (and the console) can tell which nodes are alive, and a node whose lease ran out can
// be treated as dead. The row says which address the node listens on and which version it runs.
import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { opsContext } from "./context.ts";
import { connCodePrefix } from "./recovery.ts";

/** Args of `node.lease`. */
export interface NodeLeaseArgs {
  /** `cluster.node_id`. */
  nodeId: string;
  /** Where the node listens (`host:port`), as the console shows it. */
  address: string;
  /** The node's NixMsg version. */
  version: string;
  /** How long the lease lasts from `now` (ms, > 0). */
  leaseMs: number;
  /** MQTT connections the node holds now, for the console (default 0). */
  connections?: number;
}

/** Result of `node.lease`. */
export interface NodeLease {
  /** When this node first took its lease since its row was made (Unix ms). */
  startedAt: number;
  /** Until when the lease holds (Unix ms). */
  leaseUntil: number;
}

/** Args of `node.release`. */
export interface NodeReleaseArgs {
  nodeId: string;
}

const SQL_LEASE =
  `INSERT INTO nodes (node_id, address, version, started_at, lease_until, renewed_at, connections)
  VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, version = excluded.version,
    connections = excluded.connections,
    started_at = CASE WHEN nodes.lease_until < excluded.renewed_at THEN excluded.started_at
                      ELSE nodes.started_at END,
    lease_until = excluded.lease_until, renewed_at = excluded.renewed_at
  RETURNING started_at, lease_until`;
const SQL_RELEASE = "DELETE FROM nodes WHERE node_id = ?";
const SQL_EXPIRED = "SELECT node_id FROM nodes WHERE lease_until < ? ORDER BY node_id LIMIT ?";
const SQL_REAP_ONE = "DELETE FROM nodes WHERE node_id = ? AND lease_until < ?";
const SQL_UNMARK_NODE = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < ? THEN ? ELSE expire_at END
  WHERE state = 'pending' AND substr(pushed_conn, 1, length(?)) = ?`;

// The dead node's endpoints go offline, as their disconnect would have done (issue 30).
const SQL_OFFLINE_NODE = `UPDATE endpoints SET offline_since = MAX(?, online_since),
  online_node = NULL WHERE online_node = ? RETURNING id`;
const SQL_GRACE_NOT_KEPT = `UPDATE deliveries SET expire_at = ?, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND keep = 0
    AND (expire_at IS NULL OR expire_at < ?)`;

/** Args of `node.reap`. */
export interface NodeReapArgs {
  /** The most dead nodes handled in one op. */
  limit: number;
}

/** Result of `node.reap`. */
export interface NodeReapResult {
  /** The nodes whose lease had run out, now removed. */
  nodes: string[];
  /** Push marks of their connections cleared (the deliveries wait to be pushed again). */
  deliveries: number;
  /** The endpoints those nodes held (`online_node`), now offline; sorted. */
  offline: string[];
}

/**
 * `node.lease`: takes or renews this node's lease until `now + leaseMs`. A node whose earlier
 * lease had already run out starts afresh (`startedAt = now`).
 */
export function lease(db: DatabaseSync, a: NodeLeaseArgs, now: number): NodeLease {
  const row = prepareCached(db, SQL_LEASE).get(
    a.nodeId,
    a.address,
    a.version,
    now,
    now + a.leaseMs,
    now,
    a.connections ?? 0,
  ) as { started_at: number; lease_until: number };
  return { startedAt: row.started_at, leaseUntil: row.lease_until };
}

/** `node.release`: a clean shutdown gives the lease up at once; true when there was one. */
export function release(db: DatabaseSync, a: NodeReleaseArgs, _now: number): boolean {
  return prepareCached(db, SQL_RELEASE).run(a.nodeId).changes > 0;
}

/**
 * `node.reap` (issue 30): a node whose lease ran out counts as dead. The push marks of its
 * connections (codes `<nodeId>.…`) are cleared, as its own `recovery.startup` would do, so
 * another node pushes those deliveries again (not-kept ones wait at least the grace period for
 * the endpoint to come back), the endpoints it held go offline (their not-kept deliveries get
 * the grace deadline, as at a disconnect), and its row goes. Any node may run it; a node that renews later
 * takes its lease afresh.
 */
export function reap(db: DatabaseSync, a: NodeReapArgs, now: number): NodeReapResult {
  const rows = prepareCached(db, SQL_EXPIRED).all(now, a.limit) as { node_id: string }[];
  const until = now + opsContext.limits.graceMs;
  const nodes: string[] = [];
  const offline: string[] = [];
  let deliveries = 0;
  for (const { node_id } of rows) {
    if (Number(prepareCached(db, SQL_REAP_ONE).run(node_id, now).changes) === 0) continue;
    const p = connCodePrefix(node_id);
    deliveries += Number(prepareCached(db, SQL_UNMARK_NODE).run(now, until, until, p, p).changes);
    const gone = prepareCached(db, SQL_OFFLINE_NODE).all(now, node_id) as { id: string }[];
    for (const { id } of gone) {
      prepareCached(db, SQL_GRACE_NOT_KEPT).run(until, now, id, until);
      offline.push(id);
    }
    nodes.push(node_id);
  }
  return { nodes, deliveries, offline: offline.sort() };
}

/** The node ops, merged into the writer's registry in `mod.ts`. */
export const nodeOps = {
  "node.lease": lease,
  "node.release": release,
  "node.reap": reap,
};
