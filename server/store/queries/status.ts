import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import {
  countDeliveries,
  type DeliveryState,
  messageById,
  type MessageState,
  type ReceiptRow,
  type ReceiptState,
} from "../ops/receipts.ts";

// Reads for the main thread's read connection (spec 7.2): message status, receipts to push,
// the scheduler's next wake-up and the source of a `msg` frame.

const SQL_STATUS_ITEMS = `SELECT endpoint_id, state, reason FROM deliveries
  WHERE seq = ? AND endpoint_id > ? ORDER BY endpoint_id LIMIT ?`;
const SQL_PENDING_RECEIPTS = `SELECT receipt_id, sender_id, msg_id, endpoint_id, state, reason,
  created_at FROM receipts WHERE sender_id = ? AND acked = 0 AND receipt_id > ?
  ORDER BY receipt_id LIMIT ?`;
const SQL_NEXT_DUE = "SELECT min(send_at) AS at FROM messages WHERE state = 'scheduled'";
const SQL_FRAME_SOURCE = `SELECT m.id, m.sender_id, m.dest_kind, m.dest_id, m.body_enc,
  m.content_type, m.meta, m.send_at, b.body
  FROM messages m JOIN message_bodies b ON b.seq = m.seq WHERE m.seq = ?`;

/** spec 6.4: `limit` of a status page is at most 200. */
export const MAX_STATUS_LIMIT = 200;

/** One recipient's line of a status answer. */
export interface StatusItem {
  endpointId: string;
  state: DeliveryState;
  reason: string;
}

/** The answer to `status` (spec 6.4); never includes the body. */
export interface MessageStatus {
  id: string;
  state: MessageState;
  reason: string;
  sendAtMs: number;
  counts: Record<DeliveryState, number>;
  items: StatusItem[];
  /** The last endpoint id of this page; "" when there is no further page. */
  nextCursor: string;
}

/**
 * The status of one of the sender's messages, recipients ordered by endpoint id after `cursor`
 * (spec 6.4). Null when the record is gone (`not_found`), even if its idempotency key remains.
 */
export function messageStatus(
  db: DatabaseSync,
  senderId: string,
  id: string,
  cursor: string,
  limit: number,
): MessageStatus | null {
  const msg = messageById(db, senderId, id);
  if (msg === undefined) return null;
  const size = Math.max(1, Math.min(MAX_STATUS_LIMIT, Math.trunc(limit)));
  // One row more than asked tells whether a next page exists.
  const rows = prepareCached(db, SQL_STATUS_ITEMS).all(msg.seq, cursor, size + 1) as {
    endpoint_id: string;
    state: DeliveryState;
    reason: string;
  }[];
  const page = rows.slice(0, size);
  const items = page.map((r) => ({ endpointId: r.endpoint_id, state: r.state, reason: r.reason }));
  const nextCursor = rows.length > size ? page[page.length - 1].endpoint_id : "";
  return {
    id: msg.id,
    state: msg.state,
    reason: msg.reason,
    sendAtMs: msg.send_at,
    counts: countDeliveries(db, msg.seq),
    items,
    nextCursor,
  };
}

/** Unacknowledged receipts of `senderId` after `afterReceiptId`, oldest first (spec 6.4). */
export function pendingReceipts(
  db: DatabaseSync,
  senderId: string,
  afterReceiptId: number,
  limit: number,
): ReceiptRow[] {
  const rows = prepareCached(db, SQL_PENDING_RECEIPTS).all(senderId, afterReceiptId, limit) as {
    receipt_id: number;
    sender_id: string;
    msg_id: string;
    endpoint_id: string;
    state: ReceiptState;
    reason: string;
    created_at: number;
  }[];
  return rows.map((r) => ({
    receiptId: r.receipt_id,
    senderId: r.sender_id,
    msgId: r.msg_id,
    endpointId: r.endpoint_id,
    state: r.state,
    reason: r.reason,
    atMs: r.created_at,
  }));
}

/** The earliest send_at of a scheduled message, for the scheduler's timer (spec 7.4). */
export function nextDueAt(db: DatabaseSync): number | null {
  return (prepareCached(db, SQL_NEXT_DUE).get() as { at: number | null }).at;
}

/** What a `msg` frame is built from (spec 6.3). */
export interface FrameSource {
  id: string;
  senderId: string;
  destKind: "endpoint" | "group";
  destId: string;
  body: Uint8Array;
  bodyEnc: "utf8" | "base64";
  contentType: string;
  /** Serialized JSON object, as stored. */
  meta: string;
  sendAt: number;
}

/** The fields and body of message `seq`; null once the body is deleted (completed). */
export function frameSource(db: DatabaseSync, seq: number): FrameSource | null {
  const row = prepareCached(db, SQL_FRAME_SOURCE).get(seq) as {
    id: string;
    sender_id: string;
    dest_kind: "endpoint" | "group";
    dest_id: string;
    body_enc: "utf8" | "base64";
    content_type: string;
    meta: string;
    send_at: number;
    body: Uint8Array;
  } | undefined;
  if (row === undefined) return null;
  return {
    id: row.id,
    senderId: row.sender_id,
    destKind: row.dest_kind,
    destId: row.dest_id,
    body: row.body,
    bodyEnc: row.body_enc,
    contentType: row.content_type,
    meta: row.meta,
    sendAt: row.send_at,
  };
}
