import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import {
  type DeliveryState,
  finalize,
  messageById,
  messageBySeq,
  type MessageRow,
  noteReceipt,
  type ReceiptRow,
} from "./receipts.ts";

// One delivery's life after dispatch: push marks, acks, ack timeouts, expiry (spec 7.5, 7.6).
// Every change is a conditional UPDATE; 0 changed rows means someone else got there first.

const SQL_CLAIMABLE = `SELECT d.seq, d.keep, d.expire_at, d.send_at, m.id, m.sender_id
  FROM deliveries d JOIN messages m ON m.seq = d.seq
  WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.pushed_conn IS NULL
    AND (d.expire_at IS NULL OR d.expire_at > ?)
  ORDER BY d.send_at, d.seq LIMIT ?`;
const SQL_MARK = `UPDATE deliveries SET pushed_conn = ?, pushed_at = ?, attempts = attempts + 1,
  updated_at = ? WHERE seq = ? AND endpoint_id = ? AND state = 'pending' AND pushed_conn IS NULL`;
const SQL_UNMARK = `UPDATE deliveries SET pushed_conn = NULL, updated_at = ?
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending' AND pushed_conn = ?`;
const SQL_REJECT_TOO_LARGE = `UPDATE deliveries SET state = 'rejected', reason = 'too_large',
  updated_at = ? WHERE seq = ? AND endpoint_id = ? AND state = 'pending'
    AND (pushed_conn IS NULL OR pushed_conn = ?)`;
const SQL_DELIVERY = `SELECT state, keep, expire_at, pushed_conn FROM deliveries
  WHERE seq = ? AND endpoint_id = ?`;
const SQL_END_PUSHED = `UPDATE deliveries SET state = ?, reason = ?, updated_at = ?
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending' AND pushed_conn = ?`;
const SQL_ACCEPT = `UPDATE deliveries SET state = 'accepted', reason = '', updated_at = ?
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending' RETURNING pushed_conn`;
const SQL_EXPIRABLE = `SELECT seq, endpoint_id, keep FROM deliveries
  WHERE state = 'pending' AND expire_at <= ? AND pushed_conn IS NULL
  ORDER BY expire_at LIMIT ?`;
const SQL_EXPIRE = `UPDATE deliveries SET state = ?, reason = ?, updated_at = ?
  WHERE seq = ? AND endpoint_id = ? AND state = 'pending' AND pushed_conn IS NULL
    AND expire_at <= ?`;

/** Which connection a delivery is about: the push loop's identity for one pushed message. */
export interface DeliveryRef {
  seq: number;
  endpointId: string;
  connCode: string;
}

/** Args of `delivery.claim`. */
export interface ClaimArgs {
  endpointId: string;
  connCode: string;
  /** The free room in the push window. */
  limit: number;
}

/** One claimed delivery; the main thread reads message and body itself to build the frame. */
export interface ClaimedDelivery {
  seq: number;
  msgId: string;
  senderId: string;
  keep: boolean;
  expireAt: number | null;
  /** When the message became due; the push latency is measured from here (spec 4.3). */
  sendAt: number;
}

/**
 * `delivery.claim` (spec 7.5 steps 1, 3): marks up to `limit` unpushed pending deliveries of
 * the endpoint, oldest send_at first, as pushed to `connCode`. Publish only after the commit.
 * Deliveries already past `expire_at` are left for the cleanup loop.
 */
export function claimDeliveries(
  db: DatabaseSync,
  args: ClaimArgs,
  now: number,
): { claimed: ClaimedDelivery[] } {
  const claimed: ClaimedDelivery[] = [];
  if (args.limit <= 0) return { claimed };
  const rows = prepareCached(db, SQL_CLAIMABLE).all(args.endpointId, now, args.limit) as {
    seq: number;
    keep: number;
    expire_at: number | null;
    id: string;
    sender_id: string;
    send_at: number;
  }[];
  for (const r of rows) {
    const changed = prepareCached(db, SQL_MARK).run(
      args.connCode,
      now,
      now,
      r.seq,
      args.endpointId,
    );
    if (Number(changed.changes) === 0) continue;
    claimed.push({
      seq: r.seq,
      msgId: r.id,
      senderId: r.sender_id,
      keep: r.keep === 1,
      expireAt: r.expire_at,
      sendAt: r.send_at,
    });
  }
  return { claimed };
}

/**
 * `delivery.unmark` (spec 7.5 step 4): a publish failed or was dropped; the mark is cleared
 * only while it is still this connection's, so the delivery is pushed again.
 */
export function unmarkDelivery(
  db: DatabaseSync,
  args: DeliveryRef,
  now: number,
): { cleared: boolean } {
  const r = prepareCached(db, SQL_UNMARK).run(now, args.seq, args.endpointId, args.connCode);
  return { cleared: Number(r.changes) > 0 };
}

/** Result of the ops that may end a delivery the caller pushed. */
export interface EndedDelivery {
  msgId: string;
  senderId: string;
  receipts: ReceiptRow[];
}

/**
 * `delivery.reject_too_large` (spec 7.5 step 2): the `msg` frame exceeds what this connection
 * can receive, so the delivery is `rejected` (`too_large`) instead of pushed.
 */
export function rejectTooLarge(
  db: DatabaseSync,
  args: DeliveryRef,
  now: number,
): EndedDelivery & { rejected: boolean } {
  const receipts: ReceiptRow[] = [];
  const msg = messageBySeq(db, args.seq);
  if (msg === undefined) return { rejected: false, msgId: "", senderId: "", receipts };
  const r = prepareCached(db, SQL_REJECT_TOO_LARGE).run(
    now,
    args.seq,
    args.endpointId,
    args.connCode,
  );
  const rejected = Number(r.changes) > 0;
  if (rejected) {
    noteReceipt(db, receipts, msg, args.endpointId, "rejected", "too_large", now);
    finalize(db, msg.seq);
  }
  return { rejected, msgId: msg.id, senderId: msg.sender_id, receipts };
}

/** Result of `delivery.ack_timeout`. */
export interface AckTimeoutResult extends EndedDelivery {
  /** dropped/expired: send `revoked`; repush: wake the push loop; none: nothing to do. */
  outcome: "dropped" | "expired" | "repush" | "none";
}

/**
 * `delivery.ack_timeout` (spec 7.5 step 5), only while the delivery is still pending and pushed
 * to `connCode`: not kept -> dropped (not_acked); kept and past expire_at -> expired (ttl);
 * otherwise the mark is cleared for a repush.
 */
export function ackTimeout(db: DatabaseSync, args: DeliveryRef, now: number): AckTimeoutResult {
  const receipts: ReceiptRow[] = [];
  const msg = messageBySeq(db, args.seq);
  if (msg === undefined) return { outcome: "none", msgId: "", senderId: "", receipts };
  const base = { msgId: msg.id, senderId: msg.sender_id, receipts };
  const d = prepareCached(db, SQL_DELIVERY).get(args.seq, args.endpointId) as
    | { state: DeliveryState; keep: number; expire_at: number | null; pushed_conn: string | null }
    | undefined;
  if (d === undefined || d.state !== "pending" || d.pushed_conn !== args.connCode) {
    return { outcome: "none", ...base };
  }
  let outcome: "dropped" | "expired";
  if (d.keep !== 1) outcome = "dropped";
  else if (d.expire_at !== null && d.expire_at <= now) outcome = "expired";
  else {
    const r = prepareCached(db, SQL_UNMARK).run(now, args.seq, args.endpointId, args.connCode);
    return { outcome: Number(r.changes) > 0 ? "repush" : "none", ...base };
  }
  const reason = outcome === "dropped" ? "not_acked" : "ttl";
  const r = prepareCached(db, SQL_END_PUSHED).run(
    outcome,
    reason,
    now,
    args.seq,
    args.endpointId,
    args.connCode,
  );
  if (Number(r.changes) === 0) return { outcome: "none", ...base };
  noteReceipt(db, receipts, msg, args.endpointId, outcome, reason, now);
  finalize(db, msg.seq);
  return { outcome, ...base };
}

/** Args of `delivery.ack`. */
export interface AckArgs {
  /** The endpoint acknowledging. */
  endpointId: string;
  /** The message's sender (`from` of the ack frame). */
  from: string;
  id: string;
  /**
   * Also claim for this connection of the acker, in the same transaction, what the freed push
   * window takes (`delivery.claim`); saves the push loop a writer round trip per message.
   */
  claim?: { connCode: string; limit: number };
}

/** Result of `delivery.ack`. */
export interface AckResult {
  /** `accepted`, or the final state the delivery had already reached (spec 6.3). */
  result: Exclude<DeliveryState, "pending">;
  /** True when this ack moved the delivery to accepted. */
  changed: boolean;
  receipts: ReceiptRow[];
  /** The connection it had been pushed to, when this ack accepted it: stop its ack timer. */
  wasPushedTo: string | null;
  /** True when this ack ended the message's last pending delivery (spec 7.6 收尾). */
  completed: boolean;
  /** What `claim` marked as pushed (empty without `claim`); publish only after the commit. */
  claimed: ClaimedDelivery[];
}

/**
 * `delivery.ack` (spec 6.3, 7.6): accepts the acker's delivery while it is pending, whichever
 * connection it was pushed to. A repeated ack is `accepted` again without a new receipt; an ack
 * after recall, expiry, drop or rejection answers that state.
 *
 * @throws {OpError} `not_found` when the message or the acker's delivery does not exist.
 */
export function ackDelivery(db: DatabaseSync, args: AckArgs, now: number): AckResult {
  const r = ackOne(db, args, now);
  if (args.claim === undefined) return { ...r, claimed: [] };
  const { connCode, limit } = args.claim;
  return { ...r, ...claimDeliveries(db, { endpointId: args.endpointId, connCode, limit }, now) };
}

function ackOne(db: DatabaseSync, args: AckArgs, now: number): Omit<AckResult, "claimed"> {
  const msg = messageById(db, args.from, args.id);
  if (msg === undefined) throw new OpError("not_found");
  // The usual case first: a pending delivery becomes accepted (a conditional update).
  const accepted = prepareCached(db, SQL_ACCEPT).get(now, msg.seq, args.endpointId) as
    | { pushed_conn: string | null }
    | undefined;
  if (accepted !== undefined) {
    const receipts: ReceiptRow[] = [];
    noteReceipt(db, receipts, msg, args.endpointId, "accepted", "", now);
    const completed = finalize(db, msg.seq);
    return {
      result: "accepted",
      changed: true,
      receipts,
      wasPushedTo: accepted.pushed_conn,
      completed,
    };
  }
  // Not pending (a repeated ack, or it ended otherwise first, spec 7.1): answer its state.
  const d = prepareCached(db, SQL_DELIVERY).get(msg.seq, args.endpointId) as
    | { state: DeliveryState }
    | undefined;
  if (d === undefined) throw new OpError("not_found");
  if (d.state === "pending") throw new Error("Delivery stayed pending after a conditional accept");
  return { result: d.state, changed: false, receipts: [], wasPushedTo: null, completed: false };
}

/** Args of `delivery.expire`. */
export interface ExpireArgs {
  limit: number;
}

/**
 * `delivery.expire` (spec 7.5 清理循环): unpushed pending deliveries past `expire_at` become
 * `expired` (ttl) when kept, else `dropped` (offline). Pushed ones belong to the ack timeout.
 */
export function expireDeliveries(
  db: DatabaseSync,
  args: ExpireArgs,
  now: number,
): { changed: number; receipts: ReceiptRow[] } {
  const rows = prepareCached(db, SQL_EXPIRABLE).all(now, args.limit) as {
    seq: number;
    endpoint_id: string;
    keep: number;
  }[];
  const receipts: ReceiptRow[] = [];
  const touched = new Set<number>();
  const messages = new Map<number, MessageRow>();
  let changed = 0;
  for (const row of rows) {
    const [state, reason] = row.keep === 1 ? ["expired", "ttl"] as const : [
      "dropped",
      "offline",
    ] as const;
    const r = prepareCached(db, SQL_EXPIRE).run(state, reason, now, row.seq, row.endpoint_id, now);
    if (Number(r.changes) === 0) continue;
    changed++;
    touched.add(row.seq);
    let msg = messages.get(row.seq);
    if (msg === undefined) {
      msg = messageBySeq(db, row.seq);
      if (msg !== undefined) messages.set(row.seq, msg);
    }
    if (msg !== undefined) noteReceipt(db, receipts, msg, row.endpoint_id, state, reason, now);
  }
  for (const seq of touched) finalize(db, seq);
  return { changed, receipts };
}

/** The delivery ops, merged into the writer's registry in `mod.ts`. */
export const deliveryOps = {
  "delivery.claim": claimDeliveries,
  "delivery.unmark": unmarkDelivery,
  "delivery.reject_too_large": rejectTooLarge,
  "delivery.ack_timeout": ackTimeout,
  "delivery.ack": ackDelivery,
  "delivery.expire": expireDeliveries,
};
