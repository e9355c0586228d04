import type {
  AckArgs,
  AckResult,
  AckTimeoutResult,
  ClaimArgs,
  ClaimedDelivery,
  DeliveryRef,
  EndedDelivery,
  ExpireArgs,
} from "../../ops/deliveries.ts";
import type { DeliveryState, MessageRow, ReceiptRow } from "../../ops/receipts.ts";
import { OpError } from "../../op_error.ts";
import type { PgTx } from "../op.ts";
import { finalize, messageById, messageBySeq, noteReceipt } from "./receipts.ts";

// One delivery's life after dispatch (spec 7.5, 7.6); the twin of server/store/ops/deliveries.ts.
// Every change is a conditional UPDATE (compare-and-set on the state and the push mark).

// One statement picks and marks. SKIP LOCKED: rows another server's open transaction is marking
// are left to it instead of waited for.
const SQL_CLAIM = `WITH picked AS (
    SELECT seq FROM deliveries
    WHERE endpoint_id = $1 AND state = 'pending' AND pushed_conn IS NULL
      AND (expire_at IS NULL OR expire_at > $2)
    ORDER BY send_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
  UPDATE deliveries d SET pushed_conn = $4, pushed_at = $2, attempts = d.attempts + 1,
    updated_at = $2
  FROM picked, messages m
  WHERE d.seq = picked.seq AND d.endpoint_id = $1 AND m.seq = d.seq
    AND d.state = 'pending' AND d.pushed_conn IS NULL
  RETURNING d.seq, d.keep, d.expire_at, d.send_at, m.id, m.sender_id`;
const SQL_UNMARK = `UPDATE deliveries SET pushed_conn = NULL, updated_at = $1
  WHERE seq = $2 AND endpoint_id = $3 AND state = 'pending' AND pushed_conn = $4`;
const SQL_REJECT_TOO_LARGE = `UPDATE deliveries SET state = 'rejected', reason = 'too_large',
  updated_at = $1 WHERE seq = $2 AND endpoint_id = $3 AND state = 'pending'
    AND (pushed_conn IS NULL OR pushed_conn = $4)`;
const SQL_DELIVERY = `SELECT state, keep, expire_at, pushed_conn FROM deliveries
  WHERE seq = $1 AND endpoint_id = $2`;
const SQL_END_PUSHED = `UPDATE deliveries SET state = $1, reason = $2, updated_at = $3
  WHERE seq = $4 AND endpoint_id = $5 AND state = 'pending' AND pushed_conn = $6`;
const SQL_ACCEPT = `UPDATE deliveries SET state = 'accepted', reason = '', updated_at = $1
  WHERE seq = $2 AND endpoint_id = $3 AND state = 'pending' RETURNING pushed_conn`;
const SQL_EXPIRABLE = `SELECT seq, endpoint_id, keep FROM deliveries
  WHERE state = 'pending' AND expire_at <= $1 AND pushed_conn IS NULL
  ORDER BY expire_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
const SQL_EXPIRE = `UPDATE deliveries SET state = $1, reason = $2, updated_at = $3
  WHERE seq = $4 AND endpoint_id = $5 AND state = 'pending' AND pushed_conn IS NULL
    AND expire_at <= $3`;

/** `delivery.claim` (spec 7.5 steps 1, 3): marks up to `limit` unpushed deliveries. */
export async function claimDeliveries(
  t: PgTx,
  args: ClaimArgs,
  now: number,
): Promise<{ claimed: ClaimedDelivery[] }> {
  if (args.limit <= 0) return { claimed: [] };
  const rows = await t.q<{
    seq: number;
    keep: number;
    expire_at: number | null;
    send_at: number;
    id: string;
    sender_id: string;
  }>(SQL_CLAIM, [args.endpointId, now, args.limit, args.connCode]);
  // RETURNING has no order: push oldest first, as the SQLite op does.
  const sorted = [...rows].sort((a, b) => a.send_at - b.send_at || a.seq - b.seq);
  return {
    claimed: sorted.map((r) => ({
      seq: r.seq,
      msgId: r.id,
      senderId: r.sender_id,
      keep: r.keep === 1,
      expireAt: r.expire_at,
      sendAt: r.send_at,
    })),
  };
}

/** `delivery.unmark` (spec 7.5 step 4): clears the mark while it is still this connection's. */
export async function unmarkDelivery(
  t: PgTx,
  args: DeliveryRef,
  now: number,
): Promise<{ cleared: boolean }> {
  const r = await t.q(SQL_UNMARK, [now, args.seq, args.endpointId, args.connCode]);
  return { cleared: r.count > 0 };
}

/** `delivery.reject_too_large` (spec 7.5 step 2). */
export async function rejectTooLarge(
  t: PgTx,
  args: DeliveryRef,
  now: number,
): Promise<EndedDelivery & { rejected: boolean }> {
  const receipts: ReceiptRow[] = [];
  const msg = await messageBySeq(t, args.seq);
  if (msg === undefined) return { rejected: false, msgId: "", senderId: "", receipts };
  const r = await t.q(SQL_REJECT_TOO_LARGE, [now, args.seq, args.endpointId, args.connCode]);
  const rejected = r.count > 0;
  if (rejected) {
    await noteReceipt(t, receipts, msg, args.endpointId, "rejected", "too_large", now);
    await finalize(t, msg.seq);
  }
  return { rejected, msgId: msg.id, senderId: msg.sender_id, receipts };
}

/** `delivery.ack_timeout` (spec 7.5 step 5). */
export async function ackTimeout(
  t: PgTx,
  args: DeliveryRef,
  now: number,
): Promise<AckTimeoutResult> {
  const receipts: ReceiptRow[] = [];
  const msg = await messageBySeq(t, args.seq);
  if (msg === undefined) return { outcome: "none", msgId: "", senderId: "", receipts };
  const base = { msgId: msg.id, senderId: msg.sender_id, receipts };
  const d = (await t.q<{
    state: DeliveryState;
    keep: number;
    expire_at: number | null;
    pushed_conn: string | null;
  }>(SQL_DELIVERY, [args.seq, args.endpointId]))[0];
  if (d === undefined || d.state !== "pending" || d.pushed_conn !== args.connCode) {
    return { outcome: "none", ...base };
  }
  let outcome: "dropped" | "expired";
  if (d.keep !== 1) outcome = "dropped";
  else if (d.expire_at !== null && d.expire_at <= now) outcome = "expired";
  else {
    const r = await t.q(SQL_UNMARK, [now, args.seq, args.endpointId, args.connCode]);
    return { outcome: r.count > 0 ? "repush" : "none", ...base };
  }
  const reason = outcome === "dropped" ? "not_acked" : "ttl";
  const r = await t.q(SQL_END_PUSHED, [
    outcome,
    reason,
    now,
    args.seq,
    args.endpointId,
    args.connCode,
  ]);
  if (r.count === 0) return { outcome: "none", ...base };
  await noteReceipt(t, receipts, msg, args.endpointId, outcome, reason, now);
  await finalize(t, msg.seq);
  return { outcome, ...base };
}

/** `delivery.ack` (spec 6.3, 7.6). @throws {OpError} `not_found`. */
export async function ackDelivery(t: PgTx, args: AckArgs, now: number): Promise<AckResult> {
  const r = await ackOne(t, args, now);
  if (args.claim === undefined) return { ...r, claimed: [] };
  const { connCode, limit } = args.claim;
  return {
    ...r,
    ...(await claimDeliveries(t, { endpointId: args.endpointId, connCode, limit }, now)),
  };
}

async function ackOne(t: PgTx, args: AckArgs, now: number): Promise<Omit<AckResult, "claimed">> {
  const msg = await messageById(t, args.from, args.id);
  if (msg === undefined) throw new OpError("not_found");
  const accepted = (await t.q<{ pushed_conn: string | null }>(SQL_ACCEPT, [
    now,
    msg.seq,
    args.endpointId,
  ]))[0];
  if (accepted !== undefined) {
    const receipts: ReceiptRow[] = [];
    await noteReceipt(t, receipts, msg, args.endpointId, "accepted", "", now);
    const completed = await finalize(t, msg.seq);
    return {
      result: "accepted",
      changed: true,
      receipts,
      wasPushedTo: accepted.pushed_conn,
      completed,
    };
  }
  const d = (await t.q<{ state: DeliveryState }>(SQL_DELIVERY, [msg.seq, args.endpointId]))[0];
  if (d === undefined) throw new OpError("not_found");
  if (d.state === "pending") throw new Error("Delivery stayed pending after a conditional accept");
  return { result: d.state, changed: false, receipts: [], wasPushedTo: null, completed: false };
}

/** `delivery.expire` (spec 7.5 清理循环). */
export async function expireDeliveries(
  t: PgTx,
  args: ExpireArgs,
  now: number,
): Promise<{ changed: number; receipts: ReceiptRow[] }> {
  const rows = await t.q<{ seq: number; endpoint_id: string; keep: number }>(SQL_EXPIRABLE, [
    now,
    args.limit,
  ]);
  const receipts: ReceiptRow[] = [];
  const touched = new Set<number>();
  const messages = new Map<number, MessageRow>();
  let changed = 0;
  for (const row of rows) {
    const [state, reason] = row.keep === 1
      ? ["expired", "ttl"] as const
      : ["dropped", "offline"] as const;
    const r = await t.q(SQL_EXPIRE, [state, reason, now, row.seq, row.endpoint_id]);
    if (r.count === 0) continue;
    changed++;
    touched.add(row.seq);
    let msg = messages.get(row.seq);
    if (msg === undefined) {
      msg = await messageBySeq(t, row.seq);
      if (msg !== undefined) messages.set(row.seq, msg);
    }
    if (msg !== undefined) await noteReceipt(t, receipts, msg, row.endpoint_id, state, reason, now);
  }
  for (const seq of touched) await finalize(t, seq);
  return { changed, receipts };
}

/** The delivery ops. */
export const pgDeliveryOps = {
  "delivery.claim": claimDeliveries,
  "delivery.unmark": unmarkDelivery,
  "delivery.reject_too_large": rejectTooLarge,
  "delivery.ack_timeout": ackTimeout,
  "delivery.ack": ackDelivery,
  "delivery.expire": expireDeliveries,
};
