import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import type { DeliveryState, ReceiptRow, ReceiptState } from "./receipts.ts";
import type { RevokeReason } from "../../protocol/frames.ts";
import { connected, disconnected, opsContext } from "./context.ts";

// Webhooks (issue 34): an endpoint's webhook row, and the durable outbox of its events. The
// outbox is not a table of its own: `hook_due` on deliveries and receipts is each event's due
// time (migration 8), so every attempt is driven from the database and a restart loses nothing.
// While a `msg` POST is in flight its delivery is marked pushed to WEBHOOK_CONN, which keeps the
// MQTT push loop and the cleanup loop off it exactly as for a device connection (spec 7.5), and
// `hook_due` holds the end of the claim's lease: a node that dies mid-request leaves a mark that
// any node may take again after the lease.
//
// An enabled webhook counts as a live connection of its endpoint for dispatch (spec 7.4 "对方有
// 连接"): a message that is not kept waits for it instead of being dropped as offline. Its grace
// period starts with the first failed POST (`webhook.retry` sets `expire_at`), so a dead webhook
// ends such a message as `dropped` after `grace_seconds`, as a device that went away would.

/** The `pushed_conn` of a delivery whose `msg` event is being POSTed (spelled out in the SQL). */
export const WEBHOOK_CONN = "webhook";

const SQL_ENDPOINT = "SELECT 1 AS found FROM endpoints WHERE id = ?";
const SQL_GET = `SELECT endpoint_id, url, secret, enabled, created_at, updated_at
  FROM webhooks WHERE endpoint_id = ?`;
const SQL_LIST = `SELECT endpoint_id, url, secret, enabled, created_at, updated_at
  FROM webhooks ORDER BY endpoint_id`;
const SQL_INSERT = `INSERT INTO webhooks (endpoint_id, url, secret, enabled, created_at,
  updated_at) VALUES (?, ?, ?, ?, ?, ?)`;
const SQL_UPDATE = `UPDATE webhooks SET url = ?, enabled = ?, secret = coalesce(?, secret),
  updated_at = ? WHERE endpoint_id = ?`;
const SQL_DELETE = "DELETE FROM webhooks WHERE endpoint_id = ?";
const SQL_RELEASE_MARKS = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND pushed_conn = 'webhook'`;
const SQL_MSG_DUE = `SELECT d.seq, d.send_at, d.attempts, m.id, m.sender_id
  FROM deliveries d JOIN messages m ON m.seq = d.seq
  WHERE d.endpoint_id = ? AND d.state = 'pending'
    AND (d.pushed_conn IS NULL OR d.pushed_conn = 'webhook')
    AND (d.hook_due IS NULL OR d.hook_due <= ?) AND (d.expire_at IS NULL OR d.expire_at > ?)
  ORDER BY d.send_at, d.seq LIMIT ?`;
const SQL_MSG_MARK = `UPDATE deliveries SET pushed_conn = 'webhook', pushed_at = ?,
  attempts = attempts + 1, hook_due = ?, updated_at = ?
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending'
    AND (pushed_conn IS NULL OR pushed_conn = 'webhook')
    AND (hook_due IS NULL OR hook_due <= ?)`;
const SQL_RECEIPTS_DUE = `SELECT receipt_id, msg_id, endpoint_id, state, reason, created_at
  FROM receipts WHERE sender_id = ? AND acked = 0 AND (hook_due IS NULL OR hook_due <= ?)
  ORDER BY receipt_id LIMIT ?`;
const SQL_RECEIPT_MARK = `UPDATE receipts SET hook_due = ?
  WHERE receipt_id = ? AND sender_id = ? AND acked = 0`;
const SQL_REVOKED_DUE = `SELECT d.seq, d.state, d.reason, m.id, m.sender_id
  FROM deliveries d JOIN messages m ON m.seq = d.seq
  WHERE d.endpoint_id = ? AND d.hook_due IS NOT NULL AND d.state NOT IN ('pending', 'accepted')
    AND d.hook_due <= ?
  ORDER BY d.hook_due LIMIT ?`;
const SQL_REVOKED_MARK = `UPDATE deliveries SET hook_due = ?
  WHERE seq = ? AND endpoint_id = ? AND hook_due IS NOT NULL
    AND state NOT IN ('pending', 'accepted')`;
const SQL_MSG_RETRY = `UPDATE deliveries SET pushed_conn = NULL, hook_due = ?, updated_at = ?,
  expire_at = CASE WHEN keep = 0 AND expire_at IS NULL THEN ? ELSE expire_at END
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending' AND pushed_conn = 'webhook'`;
const SQL_ENABLED = "SELECT endpoint_id FROM webhooks WHERE enabled = 1";
// As when a device's last connection ends (spec 7.5 任一连接断开时): not-kept deliveries get
// at least `now + grace`.
const SQL_GRACE_NOT_KEPT = `UPDATE deliveries SET expire_at = ?, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' AND keep = 0
    AND (expire_at IS NULL OR expire_at < ?)`;
const SQL_RECEIPT_RETRY = `UPDATE receipts SET hook_due = ?
  WHERE receipt_id = ? AND sender_id = ? AND acked = 0`;
const SQL_DUE = `SELECT w.endpoint_id FROM webhooks w WHERE w.enabled = 1 AND (
  EXISTS (SELECT 1 FROM deliveries d WHERE d.endpoint_id = w.endpoint_id AND d.state = 'pending'
    AND (d.pushed_conn IS NULL OR d.pushed_conn = 'webhook')
    AND (d.hook_due IS NULL OR d.hook_due <= ?1) AND (d.expire_at IS NULL OR d.expire_at > ?1))
  OR EXISTS (SELECT 1 FROM receipts r WHERE r.sender_id = w.endpoint_id AND r.acked = 0
    AND (r.hook_due IS NULL OR r.hook_due <= ?1))
  OR EXISTS (SELECT 1 FROM deliveries d WHERE d.endpoint_id = w.endpoint_id
    AND d.hook_due IS NOT NULL AND d.state NOT IN ('pending', 'accepted') AND d.hook_due <= ?1))
  ORDER BY w.endpoint_id`;
// Per webhook, so each count searches that endpoint's part of the outbox indexes.
const SQL_BACKLOG = `SELECT
  coalesce(sum((SELECT count(*) FROM deliveries d
    WHERE d.endpoint_id = w.endpoint_id AND d.state = 'pending')), 0) AS msgs,
  coalesce(sum((SELECT count(*) FROM receipts r
    WHERE r.sender_id = w.endpoint_id AND r.acked = 0)), 0) AS receipts
  FROM webhooks w WHERE w.enabled = 1`;

/** A webhook as stored. `secret` never leaves the server except once, when it is made. */
export interface WebhookRow {
  endpointId: string;
  url: string;
  secret: string;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

interface RawWebhook {
  endpoint_id: string;
  url: string;
  secret: string;
  enabled: number;
  created_at: number;
  updated_at: number;
}

/** The row of `webhooks` as a {@link WebhookRow}. */
export function webhookOf(r: RawWebhook): WebhookRow {
  return {
    endpointId: r.endpoint_id,
    url: r.url,
    secret: r.secret,
    enabled: Number(r.enabled) === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** Args of `webhook.put`. */
export interface WebhookPutArgs {
  endpointId: string;
  url: string;
  enabled: boolean;
  /** The new secret; required when the webhook does not exist yet, else kept when omitted. */
  secret?: string;
}

/**
 * `webhook.put`: creates or replaces the endpoint's webhook. Disabling it releases the marks of
 * the `msg` POSTs in flight, so the deliveries go back to the MQTT push loop and the cleanup loop.
 *
 * @throws {OpError} `not_found` when the endpoint does not exist.
 */
export function putWebhook(
  db: DatabaseSync,
  args: WebhookPutArgs,
  now: number,
): { created: boolean } {
  if (prepareCached(db, SQL_ENDPOINT).get(args.endpointId) === undefined) {
    throw new OpError("not_found");
  }
  const enabled = args.enabled ? 1 : 0;
  const existing = prepareCached(db, SQL_GET).get(args.endpointId);
  if (existing === undefined) {
    if (args.secret === undefined) throw new Error("A new webhook needs a secret");
    prepareCached(db, SQL_INSERT).run(args.endpointId, args.url, args.secret, enabled, now, now);
  } else {
    prepareCached(db, SQL_UPDATE).run(
      args.url,
      enabled,
      args.secret ?? null,
      now,
      args.endpointId,
    );
  }
  if (!args.enabled) prepareCached(db, SQL_RELEASE_MARKS).run(now, args.endpointId);
  const hook = { endpointId: args.endpointId, connCode: WEBHOOK_CONN };
  if (args.enabled) connected(db, hook, now);
  else if (!disconnected(db, hook, now).connected) graceNotKept(db, args.endpointId, now);
  return { created: existing === undefined };
}

/** `webhook.delete`: removes the endpoint's webhook and releases its in-flight marks. */
export function deleteWebhook(
  db: DatabaseSync,
  args: { endpointId: string },
  now: number,
): { deleted: boolean } {
  const r = prepareCached(db, SQL_DELETE).run(args.endpointId);
  prepareCached(db, SQL_RELEASE_MARKS).run(now, args.endpointId);
  const hook = { endpointId: args.endpointId, connCode: WEBHOOK_CONN };
  if (!disconnected(db, hook, now).connected) graceNotKept(db, args.endpointId, now);
  return { deleted: Number(r.changes) > 0 };
}

function graceNotKept(db: DatabaseSync, endpointId: string, now: number): void {
  const until = now + opsContext.limits.graceMs;
  prepareCached(db, SQL_GRACE_NOT_KEPT).run(until, now, endpointId, until);
}

/**
 * `webhook.load`: makes the writer's connection view hold exactly the enabled webhooks (at start,
 * and when another node changed them). Returns their endpoint ids.
 */
export function loadWebhooks(
  db: DatabaseSync,
  _args: Record<string, never>,
  now: number,
): { enabled: string[] } {
  const rows = prepareCached(db, SQL_ENABLED).all() as { endpoint_id: string }[];
  const enabled = rows.map((r) => r.endpoint_id);
  const want = new Set(enabled);
  for (const [id, codes] of [...opsContext.connections]) {
    if (codes.has(WEBHOOK_CONN) && !want.has(id)) {
      disconnected(db, { endpointId: id, connCode: WEBHOOK_CONN }, now);
    }
  }
  for (const id of enabled) connected(db, { endpointId: id, connCode: WEBHOOK_CONN }, now);
  return { enabled };
}

/** Args of `webhook.claim`. */
export interface WebhookClaimArgs {
  endpointId: string;
  /** Most events claimed, of all kinds together (the webhook's free concurrency). */
  limit: number;
  /** How long a claim holds before anyone may take the event again. */
  leaseMs: number;
}

/** A `msg` event claimed: the delivery (`seq`, the webhook's endpoint) is marked in flight. */
export interface ClaimedHookMsg {
  seq: number;
  msgId: string;
  senderId: string;
  sendAt: number;
  /** Pushes so far, this one included (MQTT pushes count too). */
  attempts: number;
}

/** A `revoked` event claimed (spec 6.4): a delivery POSTed at least once ended without ack. */
export interface ClaimedHookRevoked {
  seq: number;
  msgId: string;
  senderId: string;
  reason: RevokeReason;
}

/** Result of `webhook.claim`. */
export interface WebhookClaim {
  msgs: ClaimedHookMsg[];
  receipts: ReceiptRow[];
  revoked: ClaimedHookRevoked[];
}

const REVOKE_REASONS: ReadonlySet<string> = new Set<RevokeReason>([
  "recalled",
  "expired",
  "dropped",
  "left_group",
  "group_dissolved",
  "endpoint_disabled",
  "endpoint_deleted",
  "sender_disabled",
  "sender_deleted",
]);

/** The `revoked` reason of an ended delivery (spec 6.4). */
export function revokeReasonOf(state: DeliveryState, reason: string): RevokeReason {
  if (state === "recalled" || state === "expired" || state === "dropped") return state;
  return REVOKE_REASONS.has(reason) ? reason as RevokeReason : "dropped";
}

/**
 * `webhook.claim`: takes up to `limit` due events of the endpoint's webhook, `revoked` first,
 * then receipts of what it sent, then `msg` events oldest first; each gets `hook_due = now +
 * leaseMs`. POST only after the commit. Deliveries past `expire_at` are left to the cleanup loop.
 */
export function claimWebhookEvents(
  db: DatabaseSync,
  args: WebhookClaimArgs,
  now: number,
): WebhookClaim {
  const out: WebhookClaim = { msgs: [], receipts: [], revoked: [] };
  let room = args.limit;
  if (room <= 0) return out;
  const until = now + args.leaseMs;
  const revoked = prepareCached(db, SQL_REVOKED_DUE).all(args.endpointId, now, room) as {
    seq: number;
    state: DeliveryState;
    reason: string;
    id: string;
    sender_id: string;
  }[];
  for (const r of revoked) {
    prepareCached(db, SQL_REVOKED_MARK).run(until, r.seq, args.endpointId);
    out.revoked.push({
      seq: r.seq,
      msgId: r.id,
      senderId: r.sender_id,
      reason: revokeReasonOf(r.state, r.reason),
    });
  }
  room -= out.revoked.length;
  if (room <= 0) return out;
  const receipts = prepareCached(db, SQL_RECEIPTS_DUE).all(args.endpointId, now, room) as {
    receipt_id: number;
    msg_id: string;
    endpoint_id: string;
    state: ReceiptState;
    reason: string;
    created_at: number;
  }[];
  for (const r of receipts) {
    prepareCached(db, SQL_RECEIPT_MARK).run(until, r.receipt_id, args.endpointId);
    out.receipts.push({
      receiptId: r.receipt_id,
      senderId: args.endpointId,
      msgId: r.msg_id,
      endpointId: r.endpoint_id,
      state: r.state,
      reason: r.reason,
      atMs: r.created_at,
    });
  }
  room -= out.receipts.length;
  if (room <= 0) return out;
  const msgs = prepareCached(db, SQL_MSG_DUE).all(args.endpointId, now, now, room) as {
    seq: number;
    send_at: number;
    attempts: number;
    id: string;
    sender_id: string;
  }[];
  for (const r of msgs) {
    const m = prepareCached(db, SQL_MSG_MARK).run(now, until, now, r.seq, args.endpointId, now);
    if (Number(m.changes) === 0) continue;
    out.msgs.push({
      seq: r.seq,
      msgId: r.id,
      senderId: r.sender_id,
      sendAt: r.send_at,
      attempts: r.attempts + 1,
    });
  }
  return out;
}

/** Args of `webhook.retry`. */
export interface WebhookRetryArgs {
  endpointId: string;
  kind: "msg" | "receipt" | "revoked";
  /** The delivery's seq (`msg`, `revoked`) or the receipt id (`receipt`). */
  key: number;
  /** When to try again; null (only for `revoked`) gives up: the event is best effort. */
  dueAt: number | null;
}

/**
 * `webhook.retry`: a POST failed (or, for `revoked`, succeeded: `dueAt` null); the event is due
 * again at `dueAt`. A `msg` event's mark is released only while it is still the webhook's, so a
 * delivery that ended meanwhile keeps its `hook_due` and owes a `revoked` event instead.
 */
export function retryWebhookEvent(
  db: DatabaseSync,
  args: WebhookRetryArgs,
  now: number,
): { changed: boolean } {
  let changes: number | bigint;
  if (args.kind === "msg") {
    changes = prepareCached(db, SQL_MSG_RETRY).run(
      args.dueAt ?? now,
      now,
      now + opsContext.limits.graceMs,
      args.key,
      args.endpointId,
    ).changes;
  } else if (args.kind === "receipt") {
    changes = prepareCached(db, SQL_RECEIPT_RETRY).run(
      args.dueAt ?? now,
      args.key,
      args.endpointId,
    ).changes;
  } else {
    changes = prepareCached(db, SQL_REVOKED_MARK).run(args.dueAt, args.key, args.endpointId)
      .changes;
  }
  return { changed: Number(changes) > 0 };
}

/** The webhook ops, merged into the writer's registry in `mod.ts`. */
export const webhookOps = {
  "webhook.put": putWebhook,
  "webhook.delete": deleteWebhook,
  "webhook.load": loadWebhooks,
  "webhook.claim": claimWebhookEvents,
  "webhook.retry": retryWebhookEvent,
};

/** `webhook.get` (query): the endpoint's webhook, or null. */
export function webhookById(db: DatabaseSync, endpointId: string): WebhookRow | null {
  const r = prepareCached(db, SQL_GET).get(endpointId) as RawWebhook | undefined;
  return r === undefined ? null : webhookOf(r);
}

/** `webhook.list` (query): every webhook, enabled or not. */
export function listWebhooks(db: DatabaseSync): WebhookRow[] {
  return (prepareCached(db, SQL_LIST).all() as unknown as RawWebhook[]).map(webhookOf);
}

/** `webhook.due` (query): the enabled webhooks with an event due at `now`. */
export function dueWebhooks(db: DatabaseSync, now: number): string[] {
  const rows = prepareCached(db, SQL_DUE).all(now) as { endpoint_id: string }[];
  return rows.map((r) => r.endpoint_id);
}

/** `webhook.backlog` (query): events owed to enabled webhooks (metric nixmsg_webhook_backlog). */
export function webhookBacklog(db: DatabaseSync): { msgs: number; receipts: number } {
  const r = prepareCached(db, SQL_BACKLOG).get() as { msgs: number; receipts: number };
  return { msgs: Number(r.msgs), receipts: Number(r.receipts) };
}

/** SQL shared with the PostgreSQL twin (rewritten to `$n` there). */
export const WEBHOOK_SQL = {
  SQL_ENDPOINT,
  SQL_GET,
  SQL_LIST,
  SQL_INSERT,
  SQL_UPDATE,
  SQL_DELETE,
  SQL_RELEASE_MARKS,
  SQL_MSG_DUE,
  SQL_MSG_MARK,
  SQL_RECEIPTS_DUE,
  SQL_RECEIPT_MARK,
  SQL_REVOKED_DUE,
  SQL_REVOKED_MARK,
  SQL_MSG_RETRY,
  SQL_RECEIPT_RETRY,
  SQL_DUE,
  SQL_BACKLOG,
  SQL_ENABLED,
  SQL_GRACE_NOT_KEPT,
};
