import { OpError } from "../../op_error.ts";
import type { DeliveryState, ReceiptRow, ReceiptState } from "../../ops/receipts.ts";
import {
  revokeReasonOf,
  WEBHOOK_CONN,
  WEBHOOK_SQL,
  type WebhookClaim,
  type WebhookClaimArgs,
  webhookOf,
  type WebhookPutArgs,
  type WebhookRetryArgs,
  type WebhookRow,
} from "../../ops/webhooks.ts";
import type { PgReader, PgTx } from "../op.ts";
import { connected, forget } from "./context.ts";

// The twin of server/store/ops/webhooks.ts: the same statements, with `$n` placeholders.

/** `?` and `?N` placeholders as PostgreSQL's `$n`. */
function pg(sql: string): string {
  let n = 0;
  return sql.replace(/\?(\d+)?/g, (_, num: string | undefined) => `$${num ?? ++n}`);
}

const S = Object.fromEntries(
  Object.entries(WEBHOOK_SQL).map(([k, v]) => [k, pg(v)]),
) as typeof WEBHOOK_SQL;

type RawWebhook = Parameters<typeof webhookOf>[0];

/** `webhook.put`. */
export async function putWebhook(
  t: PgTx,
  args: WebhookPutArgs,
  now: number,
): Promise<{ created: boolean }> {
  if ((await t.q(S.SQL_ENDPOINT, [args.endpointId])).length === 0) throw new OpError("not_found");
  const enabled = args.enabled ? 1 : 0;
  const existing = await t.q(S.SQL_GET, [args.endpointId]);
  if (existing.length === 0) {
    if (args.secret === undefined) throw new Error("A new webhook needs a secret");
    await t.q(S.SQL_INSERT, [args.endpointId, args.url, args.secret, enabled, now, now]);
  } else {
    await t.q(S.SQL_UPDATE, [args.url, enabled, args.secret ?? null, now, args.endpointId]);
  }
  if (!args.enabled) await t.q(S.SQL_RELEASE_MARKS, [now, args.endpointId]);
  const hook = { endpointId: args.endpointId, connCode: WEBHOOK_CONN };
  if (args.enabled) await connected(t, hook, now);
  else if (!forget(t.ctx, hook)) await graceNotKept(t, args.endpointId, now);
  return { created: existing.length === 0 };
}

/** `webhook.delete`. */
export async function deleteWebhook(
  t: PgTx,
  args: { endpointId: string },
  now: number,
): Promise<{ deleted: boolean }> {
  const r = await t.q(S.SQL_DELETE, [args.endpointId]);
  await t.q(S.SQL_RELEASE_MARKS, [now, args.endpointId]);
  const hook = { endpointId: args.endpointId, connCode: WEBHOOK_CONN };
  if (!forget(t.ctx, hook)) await graceNotKept(t, args.endpointId, now);
  return { deleted: r.count > 0 };
}

async function graceNotKept(t: PgTx, endpointId: string, now: number): Promise<void> {
  const until = now + t.ctx.limits.graceMs;
  await t.q(S.SQL_GRACE_NOT_KEPT, [until, now, endpointId, until]);
}

/** `webhook.load`. */
export async function loadWebhooks(
  t: PgTx,
  _args: Record<string, never>,
  now: number,
): Promise<{ enabled: string[] }> {
  const rows = await t.q<{ endpoint_id: string }>(S.SQL_ENABLED, []);
  const enabled = rows.map((r) => r.endpoint_id);
  const want = new Set(enabled);
  for (const [id, codes] of [...t.ctx.connections]) {
    if (codes.has(WEBHOOK_CONN) && !want.has(id)) {
      forget(t.ctx, { endpointId: id, connCode: WEBHOOK_CONN });
    }
  }
  for (const id of enabled) await connected(t, { endpointId: id, connCode: WEBHOOK_CONN }, now);
  return { enabled };
}

/** `webhook.claim`. */
export async function claimWebhookEvents(
  t: PgTx,
  args: WebhookClaimArgs,
  now: number,
): Promise<WebhookClaim> {
  const out: WebhookClaim = { msgs: [], receipts: [], revoked: [] };
  let room = args.limit;
  if (room <= 0) return out;
  const until = now + args.leaseMs;
  const revoked = await t.q<{
    seq: number;
    state: DeliveryState;
    reason: string;
    id: string;
    sender_id: string;
  }>(S.SQL_REVOKED_DUE, [args.endpointId, now, room]);
  for (const r of revoked) {
    await t.q(S.SQL_REVOKED_MARK, [until, r.seq, args.endpointId]);
    out.revoked.push({
      seq: r.seq,
      msgId: r.id,
      senderId: r.sender_id,
      reason: revokeReasonOf(r.state, r.reason),
    });
  }
  room -= out.revoked.length;
  if (room <= 0) return out;
  const receipts = await t.q<{
    receipt_id: number;
    msg_id: string;
    endpoint_id: string;
    state: ReceiptState;
    reason: string;
    created_at: number;
  }>(S.SQL_RECEIPTS_DUE, [args.endpointId, now, room]);
  for (const r of receipts) {
    await t.q(S.SQL_RECEIPT_MARK, [until, r.receipt_id, args.endpointId]);
    const row: ReceiptRow = {
      receiptId: r.receipt_id,
      senderId: args.endpointId,
      msgId: r.msg_id,
      endpointId: r.endpoint_id,
      state: r.state,
      reason: r.reason,
      atMs: r.created_at,
    };
    out.receipts.push(row);
  }
  room -= out.receipts.length;
  if (room <= 0) return out;
  const msgs = await t.q<{
    seq: number;
    send_at: number;
    attempts: number;
    id: string;
    sender_id: string;
  }>(S.SQL_MSG_DUE, [args.endpointId, now, now, room]);
  for (const r of msgs) {
    const m = await t.q(S.SQL_MSG_MARK, [now, until, now, r.seq, args.endpointId, now]);
    if (m.count === 0) continue;
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

/** `webhook.retry`. */
export async function retryWebhookEvent(
  t: PgTx,
  args: WebhookRetryArgs,
  now: number,
): Promise<{ changed: boolean }> {
  let r;
  if (args.kind === "msg") {
    r = await t.q(S.SQL_MSG_RETRY, [
      args.dueAt ?? now,
      now,
      now + t.ctx.limits.graceMs,
      args.key,
      args.endpointId,
    ]);
  } else if (args.kind === "receipt") {
    r = await t.q(S.SQL_RECEIPT_RETRY, [args.dueAt ?? now, args.key, args.endpointId]);
  } else {
    r = await t.q(S.SQL_REVOKED_MARK, [args.dueAt, args.key, args.endpointId]);
  }
  return { changed: r.count > 0 };
}

/** The webhook ops. */
export const pgWebhookOps = {
  "webhook.put": putWebhook,
  "webhook.delete": deleteWebhook,
  "webhook.load": loadWebhooks,
  "webhook.claim": claimWebhookEvents,
  "webhook.retry": retryWebhookEvent,
};

/** `webhook.get` (query). */
export async function webhookById(db: PgReader, endpointId: string): Promise<WebhookRow | null> {
  const rows = await db.q<RawWebhook>(S.SQL_GET, [endpointId]);
  return rows.length === 0 ? null : webhookOf(rows[0]);
}

/** `webhook.list` (query). */
export async function listWebhooks(db: PgReader): Promise<WebhookRow[]> {
  return (await db.q<RawWebhook>(S.SQL_LIST, [])).map(webhookOf);
}

/** `webhook.due` (query). */
export async function dueWebhooks(db: PgReader, now: number): Promise<string[]> {
  return (await db.q<{ endpoint_id: string }>(S.SQL_DUE, [now])).map((r) => r.endpoint_id);
}

/** `webhook.backlog` (query). */
export async function webhookBacklog(db: PgReader): Promise<{ msgs: number; receipts: number }> {
  const rows = await db.q<{ msgs: number; receipts: number }>(S.SQL_BACKLOG, []);
  return { msgs: Number(rows[0].msgs), receipts: Number(rows[0].receipts) };
}
