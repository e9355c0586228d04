import type { DatabaseSync } from "node:sqlite";

// State that lives inside the writer Worker next to the ops (DESIGN "The writer"). The Worker
// cannot see the broker's connection table, so the main thread mirrors what dispatch needs
// (spec 7.4 "对方有连接（含握手中）") through ops. They travel through the same FIFO queue as
// every other op, so a dispatch always sees the connections as of its place in the queue.

/** The configured limits the messaging ops read (spec 11.1). */
export interface OpsLimits {
  /** `grace_seconds` in ms: how long a not-kept delivery waits for a reconnect (spec 7.4). */
  graceMs: number;
  /** `max_pending_per_sender`; 0 means unlimited (spec 7.3). */
  maxPendingPerSender: number;
  /** `max_pending_per_receiver`; 0 means unlimited (spec 7.4). */
  maxPendingPerReceiver: number;
  /** `record_retention_days`; 0 deletes a message record as soon as it completes (spec 7.6). */
  recordRetentionDays: number;
}

/** The defaults of spec 11.1, in force until `context.configure` runs. */
export const DEFAULT_OPS_LIMITS: Readonly<OpsLimits> = Object.freeze({
  graceMs: 60_000,
  maxPendingPerSender: 10_000,
  maxPendingPerReceiver: 10_000,
  recordRetentionDays: 7,
});

/**
 * The Worker-side view of the world that is not in the database.
 * `connected` holds the endpoint ids with at least one live connection, handshaking included.
 */
export const opsContext: {
  readonly connected: Set<string>;
  readonly connections: Map<string, Set<string>>;
  limits: OpsLimits;
} = {
  connected: new Set<string>(),
  /** Endpoint id -> its live connection codes ("" when the caller gives none). */
  connections: new Map<string, Set<string>>(),
  limits: { ...DEFAULT_OPS_LIMITS },
};

/** Args of {@link connected} and {@link disconnected}. */
export interface ConnectionArgs {
  endpointId: string;
  /**
   * The connection code. With it, a takeover (the new connection arrives before the old one's
   * disconnect, spec 15 "不要在旧连接的断开回调里无条件把编号标成离线") keeps the endpoint
   * connected. Without it, every connection of the endpoint counts as the same one.
   */
  connCode?: string;
}

/** Forgets every connection and restores the default limits; for tests and restarts. */
export function resetOpsContext(): void {
  opsContext.connected.clear();
  opsContext.connections.clear();
  opsContext.limits = { ...DEFAULT_OPS_LIMITS };
}

/** Sets some or all limits (config load or reload); returns the limits now in force. */
export function configure(_db: DatabaseSync, args: Partial<OpsLimits>, _now: number): OpsLimits {
  const next = { ...opsContext.limits };
  for (const key of Object.keys(DEFAULT_OPS_LIMITS) as (keyof OpsLimits)[]) {
    const value = args[key];
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(`Limit ${key} must be a non-negative number, got ${value}`);
    }
    next[key] = value;
  }
  opsContext.limits = next;
  return { ...next };
}

/** A connection of `endpointId` was accepted (before its handshake). No SQL. */
export function connected(
  _db: DatabaseSync,
  args: ConnectionArgs,
  _now: number,
): { connected: boolean } {
  let codes = opsContext.connections.get(args.endpointId);
  if (codes === undefined) {
    codes = new Set();
    opsContext.connections.set(args.endpointId, codes);
  }
  codes.add(args.connCode ?? "");
  opsContext.connected.add(args.endpointId);
  return { connected: true };
}

/**
 * A connection of `endpointId` closed. No SQL. The endpoint stays in `connected` while another
 * of its connections is alive; returns whether it still is.
 */
export function disconnected(
  _db: DatabaseSync,
  args: ConnectionArgs,
  _now: number,
): { connected: boolean } {
  const codes = opsContext.connections.get(args.endpointId);
  codes?.delete(args.connCode ?? "");
  if (codes === undefined || codes.size === 0) {
    opsContext.connections.delete(args.endpointId);
    opsContext.connected.delete(args.endpointId);
    return { connected: false };
  }
  return { connected: true };
}

/** The context ops, merged into the writer's registry in `mod.ts`. */
export const contextOps = {
  "context.configure": configure,
  "context.connected": connected,
  "context.disconnected": disconnected,
};
