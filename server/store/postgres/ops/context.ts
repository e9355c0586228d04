import { type ConnectionArgs, DEFAULT_OPS_LIMITS, type OpsLimits } from "../../ops/context.ts";
import type { PgOpsContext, PgTx } from "../op.ts";

// The twin of server/store/ops/context.ts: the store's view of the live connections and limits.
// It lives in the store object (one per process), ordered with the other ops by the writer queue.

/** `context.configure`: sets some or all limits; returns the limits now in force. */
export function configure(t: PgTx, args: Partial<OpsLimits>, _now: number): Promise<OpsLimits> {
  const next = { ...t.ctx.limits };
  for (const key of Object.keys(DEFAULT_OPS_LIMITS) as (keyof OpsLimits)[]) {
    const value = args[key];
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value < 0) {
      return Promise.reject(
        new RangeError(`Limit ${key} must be a non-negative number, got ${value}`),
      );
    }
    next[key] = value;
  }
  t.ctx.limits = next;
  return Promise.resolve({ ...next });
}

/** `context.connected`: a connection of the endpoint was accepted. No SQL. */
export function connected(
  t: PgTx,
  args: ConnectionArgs,
  _now: number,
): Promise<{ connected: boolean }> {
  let codes = t.ctx.connections.get(args.endpointId);
  if (codes === undefined) {
    codes = new Set();
    t.ctx.connections.set(args.endpointId, codes);
  }
  codes.add(args.connCode ?? "");
  t.ctx.connected.add(args.endpointId);
  return Promise.resolve({ connected: true });
}

/** `context.disconnected`: a connection closed; returns whether another one is still alive. */
export function disconnected(
  t: PgTx,
  args: ConnectionArgs,
  _now: number,
): Promise<{ connected: boolean }> {
  return Promise.resolve({ connected: forget(t.ctx, args) });
}

/** Forgets one connection of an endpoint; true while the endpoint has another. */
export function forget(ctx: PgOpsContext, args: ConnectionArgs): boolean {
  const codes = ctx.connections.get(args.endpointId);
  codes?.delete(args.connCode ?? "");
  if (codes === undefined || codes.size === 0) {
    ctx.connections.delete(args.endpointId);
    ctx.connected.delete(args.endpointId);
    return false;
  }
  return true;
}

/** The context ops. */
export const pgContextOps = {
  "context.configure": configure,
  "context.connected": connected,
  "context.disconnected": disconnected,
};
