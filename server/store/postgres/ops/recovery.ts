import {
  connCodePrefix,
  type DisconnectArgs,
  type HandshakeArgs,
  type StartupArgs,
  wasOnlineBefore,
} from "../../ops/recovery.ts";
import type { PgTx } from "../op.ts";
import { forget } from "./context.ts";

// Connection lifecycle and restart recovery (spec 7.5, 7.8); the twin of
// server/store/ops/recovery.ts.

// online_since only moves forward: the endpoint's login revision (see the SQLite twin).
const SQL_ONLINE = `UPDATE endpoints SET online_since = GREATEST($1, COALESCE(online_since, 0) + 1),
  online_node = $3 WHERE id = $2 RETURNING online_since`;
const SQL_ONLINE_NOW = "SELECT online_since, offline_since FROM endpoints WHERE id = $1";
const SQL_OFFLINE = "UPDATE endpoints SET offline_since = $1, online_node = NULL WHERE id = $2";
const SQL_CLEAR_GRACE = `UPDATE deliveries SET expire_at = NULL, updated_at = $1
  WHERE endpoint_id = $2 AND state = 'pending' AND keep = 0 AND expire_at IS NOT NULL`;
const SQL_GRACE_NOT_KEPT = `UPDATE deliveries SET expire_at = $1, updated_at = $2
  WHERE endpoint_id = $3 AND state = 'pending' AND keep = 0
    AND (expire_at IS NULL OR expire_at < $1)`;
const SQL_GRACE_KEPT_PUSHED = `UPDATE deliveries SET expire_at = $1, updated_at = $2
  WHERE endpoint_id = $3 AND state = 'pending' AND keep = 1 AND pushed_conn = $4
    AND expire_at < $1`;
const SQL_CLEAR_MARKS = `UPDATE deliveries SET pushed_conn = NULL, updated_at = $1
  WHERE endpoint_id = $2 AND state = 'pending' AND pushed_conn = $3`;
const SQL_RECOVER_DELIVERIES = `UPDATE deliveries SET pushed_conn = NULL, updated_at = $1,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < $2 THEN $2 ELSE expire_at END
  WHERE state = 'pending'`;
const SQL_RECOVER_NODE_DELIVERIES = `UPDATE deliveries SET pushed_conn = NULL, updated_at = $1,
  expire_at = CASE WHEN expire_at IS NULL OR expire_at < $2 THEN $2 ELSE expire_at END
  WHERE state = 'pending' AND left(pushed_conn, length($3)) = $3`;
const SQL_RECOVER_ENDPOINTS = `UPDATE endpoints SET offline_since = $1, online_node = NULL
  WHERE online_since IS NOT NULL AND (offline_since IS NULL OR online_since > offline_since)`;
const SQL_RECOVER_NODE_ENDPOINTS = `UPDATE endpoints
  SET offline_since = GREATEST($1, online_since), online_node = NULL WHERE online_node = $2`;

/** `endpoint.handshake` (spec 7.5 握手完成时). */
export async function handshake(
  t: PgTx,
  args: HandshakeArgs,
  now: number,
): Promise<{ onlineSince: number; cleared: number; wasOnline: boolean }> {
  const before = (await t.q<{ online_since: number | null; offline_since: number | null }>(
    SQL_ONLINE_NOW,
    [args.endpointId],
  ))[0];
  const row = (await t.q<{ online_since: number }>(SQL_ONLINE, [
    now,
    args.endpointId,
    args.nodeId ?? null,
  ]))[0];
  const r = await t.q(SQL_CLEAR_GRACE, [now, args.endpointId]);
  return {
    onlineSince: row === undefined ? now : Number(row.online_since),
    cleared: r.count,
    wasOnline: before !== undefined && wasOnlineBefore(before.online_since, before.offline_since),
  };
}

/** `endpoint.disconnect` (spec 7.5 任一连接断开时); also forgets the connection. */
export async function disconnect(
  t: PgTx,
  args: DisconnectArgs,
  now: number,
): Promise<{ cleared: number }> {
  if (args.isCurrent && await stillOnline(t, args)) {
    const until = now + t.ctx.limits.graceMs;
    await t.q(SQL_OFFLINE, [now, args.endpointId]);
    await t.q(SQL_GRACE_NOT_KEPT, [until, now, args.endpointId]);
    await t.q(SQL_GRACE_KEPT_PUSHED, [until, now, args.endpointId, args.connCode]);
  }
  const r = await t.q(SQL_CLEAR_MARKS, [now, args.endpointId, args.connCode]);
  forget(t.ctx, { endpointId: args.endpointId, connCode: args.connCode });
  return { cleared: r.count };
}

/** False when a later handshake than this connection's moved `online_since` on (issue 30). */
async function stillOnline(t: PgTx, args: DisconnectArgs): Promise<boolean> {
  if (args.onlineSince === undefined) return true;
  const row = (await t.q<{ online_since: number | null }>(SQL_ONLINE_NOW, [args.endpointId]))[0];
  return row === undefined || row.online_since === null ||
    Number(row.online_since) <= args.onlineSince;
}

/**
 * `recovery.startup` (spec 7.8): the restart counts as every endpoint having just disconnected.
 * A cluster node (`nodeId`) clears only its own connections' push marks (issue 30).
 */
export async function startup(
  t: PgTx,
  args: StartupArgs,
  now: number,
): Promise<{ deliveries: number; endpoints: number }> {
  const until = now + t.ctx.limits.graceMs;
  if (args.nodeId !== undefined) {
    const d = await t.q(SQL_RECOVER_NODE_DELIVERIES, [now, until, connCodePrefix(args.nodeId)]);
    const e = await t.q(SQL_RECOVER_NODE_ENDPOINTS, [now, args.nodeId]);
    return { deliveries: d.count, endpoints: e.count };
  }
  const d = await t.q(SQL_RECOVER_DELIVERIES, [now, until]);
  const e = await t.q(SQL_RECOVER_ENDPOINTS, [now]);
  return { deliveries: d.count, endpoints: e.count };
}

/** The connection and recovery ops. */
export const pgRecoveryOps = {
  "endpoint.handshake": handshake,
  "endpoint.disconnect": disconnect,
  "recovery.startup": startup,
};
