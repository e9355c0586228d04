import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { disconnected, opsContext } from "./context.ts";

// Connection lifecycle and restart recovery: both decide how long deliveries wait for an
// endpoint that is not there (spec 7.5 握手完成时 / 任一连接断开时, 7.8).

// online_since only moves forward, by at least 1 ms per handshake: it is the endpoint's login
// revision, so that of two logins on different cluster nodes exactly one is the last (issue 30).
// online_node: the cluster node holding this login (NULL on a single node), so that the node
// that reaps a dead one marks its endpoints offline (node.reap).
const SQL_ONLINE = `UPDATE endpoints SET online_since = MAX(?, COALESCE(online_since, 0) + 1),
  online_node = ? WHERE id = ? RETURNING online_since`;
const SQL_ONLINE_NOW = "SELECT online_since, offline_since FROM endpoints WHERE id = ?";
const SQL_OFFLINE = "UPDATE endpoints SET offline_since = ?, online_node = NULL WHERE id = ?";
const SQL_CLEAR_GRACE = `UPDATE deliveries SET expire_at = NULL, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND keep = 0 AND expire_at IS NOT NULL`;
const SQL_GRACE_NOT_KEPT = `UPDATE deliveries SET expire_at = ?, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND keep = 0
    AND (expire_at IS NULL OR expire_at < ?)`;
const SQL_GRACE_KEPT_PUSHED = `UPDATE deliveries SET expire_at = ?, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND keep = 1 AND pushed_conn = ?
    AND expire_at < ?`;
const SQL_CLEAR_MARKS = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND pushed_conn = ?`;
const SQL_RECOVER_DELIVERIES = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < ? THEN ? ELSE expire_at END
  WHERE state = 'pending'`;
const SQL_RECOVER_NODE_DELIVERIES = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < ? THEN ? ELSE expire_at END
  WHERE state = 'pending' AND substr(pushed_conn, 1, length(?)) = ?`;
const SQL_RECOVER_ENDPOINTS = `UPDATE endpoints SET offline_since = ?, online_node = NULL
  WHERE online_since IS NOT NULL AND (offline_since IS NULL OR online_since > offline_since)`;
// A restarted cluster node's endpoints are offline (their connections ended with the process).
const SQL_RECOVER_NODE_ENDPOINTS = `UPDATE endpoints
  SET offline_since = MAX(?, online_since), online_node = NULL WHERE online_node = ?`;

/** Args of `endpoint.handshake`. */
export interface HandshakeArgs {
  endpointId: string;
  /** The cluster node holding the connection (issue 30); absent on a single node. */
  nodeId?: string;
}

/**
 * `endpoint.handshake` (spec 7.5 握手完成时): the endpoint is online from now; its not-kept
 * pending deliveries lose their grace deadline, so nothing queued behind the window is dropped
 * while it stays online. Start pushing after the commit. `wasOnline`: the endpoint was online in
 * the store before (a login on another cluster node, or one not yet taken offline).
 */
export function handshake(
  db: DatabaseSync,
  args: HandshakeArgs,
  now: number,
): { onlineSince: number; cleared: number; wasOnline: boolean } {
  const before = prepareCached(db, SQL_ONLINE_NOW).get(args.endpointId) as
    | { online_since: number | null; offline_since: number | null }
    | undefined;
  const row = prepareCached(db, SQL_ONLINE).get(now, args.nodeId ?? null, args.endpointId) as
    | { online_since: number }
    | undefined;
  const r = prepareCached(db, SQL_CLEAR_GRACE).run(now, args.endpointId);
  return {
    onlineSince: row?.online_since ?? now,
    cleared: Number(r.changes),
    wasOnline: before !== undefined && wasOnlineBefore(before.online_since, before.offline_since),
  };
}

/** The store's login state before a handshake: its last login later than its last logout. */
export function wasOnlineBefore(onlineSince: number | null, offlineSince: number | null): boolean {
  return onlineSince !== null &&
    (offlineSince === null || Number(onlineSince) > Number(offlineSince));
}

/** Args of `endpoint.disconnect`. */
export interface DisconnectArgs {
  endpointId: string;
  connCode: string;
  /** Whether this was the endpoint's current connection (not one already taken over). */
  isCurrent: boolean;
  /**
   * The `onlineSince` its handshake returned (cluster nodes pass it). Then the endpoint goes
   * offline only while no later handshake, on any node, has moved `online_since` past it.
   */
  onlineSince?: number;
}

/** Args of `recovery.startup`. */
export interface StartupArgs {
  /**
   * A cluster node's id (issue 30): only the push marks of this node's connections (codes
   * `<nodeId>.…`) are cleared, and only the endpoints this node held (`online_node`) go
   * offline, since the other nodes still hold theirs. Without it the restart counts for every connection, as on a single node.
   */
  nodeId?: string;
}

/** The prefix of every connection code a cluster node hands out. */
export function connCodePrefix(nodeId: string): string {
  return `${nodeId}.`;
}

/**
 * `endpoint.disconnect` (spec 7.5 任一连接断开时). For the current connection: offline from now,
 * not-kept pending deliveries get at least `now + grace`, kept ones pushed to this connection
 * are extended to `now + grace`. For any connection: its push marks, and only its own, are
 * cleared. `cleared` counts those marks; wake a newer connection's push loop when it is > 0.
 *
 * It also does what `context.disconnected` does for `connCode`, in the same op: were the two
 * separate ops, a dispatch queued between them would see the endpoint either unconnected with a
 * stale `offline_since` (dropping a not-kept message at once) or connected after its grace
 * deadlines were set (leaving one with no deadline). A later `context.disconnected` is harmless.
 */
export function disconnect(
  db: DatabaseSync,
  args: DisconnectArgs,
  now: number,
): { cleared: number } {
  if (args.isCurrent && stillOnline(db, args)) {
    const until = now + opsContext.limits.graceMs;
    prepareCached(db, SQL_OFFLINE).run(now, args.endpointId);
    prepareCached(db, SQL_GRACE_NOT_KEPT).run(until, now, args.endpointId, until);
    prepareCached(db, SQL_GRACE_KEPT_PUSHED).run(until, now, args.endpointId, args.connCode, until);
  }
  const r = prepareCached(db, SQL_CLEAR_MARKS).run(now, args.endpointId, args.connCode);
  disconnected(db, { endpointId: args.endpointId, connCode: args.connCode }, now);
  return { cleared: Number(r.changes) };
}

/** False when a later handshake than this connection's moved `online_since` on (issue 30). */
function stillOnline(db: DatabaseSync, args: DisconnectArgs): boolean {
  if (args.onlineSince === undefined) return true;
  const row = prepareCached(db, SQL_ONLINE_NOW).get(args.endpointId) as
    | { online_since: number | null }
    | undefined;
  return row === undefined || row.online_since === null || row.online_since <= args.onlineSince;
}

/**
 * `recovery.startup` (spec 7.8), before accepting connections: the restart counts as every
 * endpoint having just disconnected. Pending deliveries lose their push marks (connection codes
 * do not survive the process) and wait at least `now + grace`, even kept ones whose TTL ran out
 * during the downtime; endpoints that were online become offline from now. Due scheduled
 * messages are left to the scheduler.
 */
export function startup(
  db: DatabaseSync,
  args: StartupArgs,
  now: number,
): { deliveries: number; endpoints: number } {
  const until = now + opsContext.limits.graceMs;
  if (args.nodeId !== undefined) {
    const p = connCodePrefix(args.nodeId);
    const d = prepareCached(db, SQL_RECOVER_NODE_DELIVERIES).run(now, until, until, p, p);
    const e = prepareCached(db, SQL_RECOVER_NODE_ENDPOINTS).run(now, args.nodeId);
    return { deliveries: Number(d.changes), endpoints: Number(e.changes) };
  }
  const d = prepareCached(db, SQL_RECOVER_DELIVERIES).run(now, until, until);
  const e = prepareCached(db, SQL_RECOVER_ENDPOINTS).run(now);
  return { deliveries: Number(d.changes), endpoints: Number(e.changes) };
}

/** The connection and recovery ops, merged into the writer's registry in `mod.ts`. */
export const recoveryOps = {
  "endpoint.handshake": handshake,
  "endpoint.disconnect": disconnect,
  "recovery.startup": startup,
};
