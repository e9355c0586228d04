import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { opsContext } from "./context.ts";

// Receipts and the end of a message's life (spec 6.4, 7.6 回执、收尾), plus the message row
// and its loaders that every messaging op shares.

const SQL_MESSAGE_BY_SEQ = `SELECT seq, id, sender_id, dest_kind, dest_id, send_at, keep,
  ttl_seconds, receipt, state, reason FROM messages WHERE seq = ?`;
const SQL_MESSAGE_BY_ID = `SELECT seq, id, sender_id, dest_kind, dest_id, send_at, keep,
  ttl_seconds, receipt, state, reason FROM messages WHERE sender_id = ? AND id = ?`;
// Written only while the sender exists (spec 7.6): one statement for the check and the write.
const SQL_INSERT_RECEIPT = `INSERT INTO receipts (sender_id, msg_id, endpoint_id, state, reason,
  created_at, acked) SELECT ?1, ?2, ?3, ?4, ?5, ?6, 0
  WHERE EXISTS (SELECT 1 FROM endpoints WHERE id = ?1)`;
const SQL_COMPLETE_IF_DONE = `UPDATE messages SET state = 'completed'
  WHERE seq = ? AND state = 'dispatched'
    AND NOT EXISTS (SELECT 1 FROM deliveries WHERE seq = ? AND +state = 'pending')`;
const SQL_COMPLETE_EARLY = `UPDATE messages SET state = 'completed', reason = ?
  WHERE seq = ? AND state = 'scheduled'`;
const SQL_DELETE_BODY = "DELETE FROM message_bodies WHERE seq = ?";
const SQL_DELETE_DELIVERIES = "DELETE FROM deliveries WHERE seq = ?";
const SQL_DELETE_MESSAGE = "DELETE FROM messages WHERE seq = ?";
const SQL_ACK_RECEIPT =
  "UPDATE receipts SET acked = 1 WHERE receipt_id = ? AND sender_id = ? AND acked = 0";
const SQL_COUNT_BY_STATE =
  "SELECT state, count(*) AS n FROM deliveries WHERE seq = ? GROUP BY state";
const SQL_RECEIPT_EXISTS = "SELECT 1 AS found FROM receipts WHERE receipt_id = ? AND sender_id = ?";

/** Message states (spec 7.1). */
export type MessageState = "scheduled" | "dispatched" | "completed";

/** Delivery states (spec 7.1). */
export type DeliveryState =
  | "pending"
  | "accepted"
  | "recalled"
  | "expired"
  | "dropped"
  | "rejected";

/** The delivery states a receipt reports (spec 6.4): every final state except `recalled`. */
export type ReceiptState = "accepted" | "expired" | "dropped" | "rejected";

/** Every delivery state, in the order of spec 7.1. */
export const DELIVERY_STATES: readonly DeliveryState[] = [
  "pending",
  "accepted",
  "recalled",
  "expired",
  "dropped",
  "rejected",
];

/** A receipt as written to `receipts` and pushed to its sender (spec 6.4 回执下行). */
export interface ReceiptRow {
  receiptId: number;
  senderId: string;
  msgId: string;
  /** "" for a message-level receipt (sender left, group dissolved, no recipients). */
  endpointId: string;
  state: ReceiptState;
  reason: string;
  atMs: number;
}

/** The columns of `messages` the state machine needs (no body). */
export interface MessageRow {
  seq: number;
  id: string;
  sender_id: string;
  dest_kind: "endpoint" | "group";
  dest_id: string;
  send_at: number;
  keep: number;
  ttl_seconds: number;
  receipt: number;
  state: MessageState;
  reason: string;
}

/** Reads a message by `seq`; undefined when its record is gone. */
export function messageBySeq(db: DatabaseSync, seq: number): MessageRow | undefined {
  return prepareCached(db, SQL_MESSAGE_BY_SEQ).get(seq) as MessageRow | undefined;
}

/** Reads a message by its sender and id; undefined when its record is gone. */
export function messageById(
  db: DatabaseSync,
  senderId: string,
  id: string,
): MessageRow | undefined {
  return prepareCached(db, SQL_MESSAGE_BY_ID).get(senderId, id) as MessageRow | undefined;
}

/** Deliveries of a message by state, every state present. */
export function countDeliveries(db: DatabaseSync, seq: number): Record<DeliveryState, number> {
  const counts = Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<
    DeliveryState,
    number
  >;
  const rows = prepareCached(db, SQL_COUNT_BY_STATE).all(seq) as {
    state: DeliveryState;
    n: number;
  }[];
  for (const r of rows) counts[r.state] = r.n;
  return counts;
}

/**
 * Writes the receipt for a delivery that just reached a final state, or a message-level one
 * (`endpointId` ""), and returns it; null when the message asked for none or its sender is gone
 * (spec 7.6). Callers never pass `recalled`: recalls have no receipt (spec 6.4).
 */
export function writeReceipt(
  db: DatabaseSync,
  msg: MessageRow,
  endpointId: string,
  state: ReceiptState,
  reason: string,
  now: number,
): ReceiptRow | null {
  if (msg.receipt !== 1) return null;
  const r = prepareCached(db, SQL_INSERT_RECEIPT).run(
    msg.sender_id,
    msg.id,
    endpointId,
    state,
    reason,
    now,
  );
  if (Number(r.changes) === 0) return null;
  return {
    receiptId: Number(r.lastInsertRowid),
    senderId: msg.sender_id,
    msgId: msg.id,
    endpointId,
    state,
    reason,
    atMs: now,
  };
}

/** {@link writeReceipt}, appending the receipt (if any) to `out`. */
export function noteReceipt(
  db: DatabaseSync,
  out: ReceiptRow[],
  msg: MessageRow,
  endpointId: string,
  state: ReceiptState,
  reason: string,
  now: number,
): void {
  const receipt = writeReceipt(db, msg, endpointId, state, reason, now);
  if (receipt !== null) out.push(receipt);
}

/**
 * spec 7.6 收尾: when a dispatched message has no pending delivery left it becomes `completed`
 * and its body is deleted; with `record_retention_days` 0 its record and deliveries go too.
 * Returns whether this call completed it.
 */
export function finalize(db: DatabaseSync, seq: number): boolean {
  const r = prepareCached(db, SQL_COMPLETE_IF_DONE).run(seq, seq);
  if (Number(r.changes) === 0) return false;
  dropCompleted(db, seq);
  return true;
}

/**
 * Ends a message that never reached dispatch (recalled, sender_left, no_recipients, …):
 * `scheduled` -> `completed` with `reason`, body deleted (spec 7.1, 7.6). Returns false when it
 * was no longer scheduled (someone else got there first, spec 7.1).
 */
export function completeEarly(db: DatabaseSync, seq: number, reason: string): boolean {
  const r = prepareCached(db, SQL_COMPLETE_EARLY).run(reason, seq);
  if (Number(r.changes) === 0) return false;
  dropCompleted(db, seq);
  return true;
}

/** The body always goes; the record too when records are not kept (spec 7.6). */
function dropCompleted(db: DatabaseSync, seq: number): void {
  prepareCached(db, SQL_DELETE_BODY).run(seq);
  if (opsContext.limits.recordRetentionDays === 0) {
    prepareCached(db, SQL_DELETE_DELIVERIES).run(seq);
    prepareCached(db, SQL_DELETE_MESSAGE).run(seq);
  }
}

/** Args of {@link ackReceipt}. */
export interface AckReceiptArgs {
  senderId: string;
  receiptId: number;
}

/**
 * `receipt_ack` (spec 6.4): marks the sender's receipt as acknowledged. `ok` is true when the
 * receipt exists and belongs to the sender, including a repeated ack.
 */
export function ackReceipt(db: DatabaseSync, args: AckReceiptArgs, _now: number): { ok: boolean } {
  const r = prepareCached(db, SQL_ACK_RECEIPT).run(args.receiptId, args.senderId);
  if (Number(r.changes) > 0) return { ok: true };
  const found = prepareCached(db, SQL_RECEIPT_EXISTS).get(args.receiptId, args.senderId);
  return { ok: found !== undefined };
}

/** The receipt ops, merged into the writer's registry in `mod.ts`. */
export const receiptOps = {
  "receipt.ack": ackReceipt,
};
