import type { ReceiptRow, ReceiptState } from "../../ops/receipts.ts";
import type { DeliveryState } from "../../ops/receipts.ts";
import { type FrameSource, MAX_STATUS_LIMIT, type MessageStatus } from "../../queries/status.ts";
import type { PgReader } from "../op.ts";
import { countDeliveries, messageById } from "../ops/receipts.ts";

// Message status, receipts to push, the scheduler's next wake-up and a `msg` frame's source
// (spec 6.3, 6.4, 7.4); the twin of server/store/queries/status.ts.

const SQL_STATUS_ITEMS = `SELECT endpoint_id, state, reason FROM deliveries
  WHERE seq = $1 AND endpoint_id > $2 ORDER BY endpoint_id LIMIT $3`;
const SQL_PENDING_RECEIPTS = `SELECT receipt_id, sender_id, msg_id, endpoint_id, state, reason,
  created_at FROM receipts WHERE sender_id = $1 AND acked = 0 AND receipt_id > $2
  ORDER BY receipt_id LIMIT $3`;
const SQL_NEXT_DUE = "SELECT min(send_at) AS at FROM messages WHERE state = 'scheduled'";
const SQL_FRAME_SOURCE = `SELECT m.id, m.sender_id, m.dest_kind, m.dest_id, m.body_enc,
  m.content_type, m.meta, m.send_at, b.body
  FROM messages m JOIN message_bodies b ON b.seq = m.seq WHERE m.seq = $1`;

/** The status of one of the sender's messages (spec 6.4); null when its record is gone. */
export async function messageStatus(
  r: PgReader,
  senderId: string,
  id: string,
  cursor: string,
  limit: number,
): Promise<MessageStatus | null> {
  const msg = await messageById(r, senderId, id);
  if (msg === undefined) return null;
  const size = Math.max(1, Math.min(MAX_STATUS_LIMIT, Math.trunc(limit)));
  const rows = await r.q<{ endpoint_id: string; state: DeliveryState; reason: string }>(
    SQL_STATUS_ITEMS,
    [msg.seq, cursor, size + 1],
  );
  const page = rows.slice(0, size);
  return {
    id: msg.id,
    state: msg.state,
    reason: msg.reason,
    sendAtMs: msg.send_at,
    counts: await countDeliveries(r, msg.seq),
    items: page.map((d) => ({ endpointId: d.endpoint_id, state: d.state, reason: d.reason })),
    nextCursor: rows.length > size ? page[page.length - 1].endpoint_id : "",
  };
}

/** Unacknowledged receipts of `senderId` after `afterReceiptId`, oldest first. */
export async function pendingReceipts(
  r: PgReader,
  senderId: string,
  afterReceiptId: number,
  limit: number,
): Promise<ReceiptRow[]> {
  const rows = await r.q<{
    receipt_id: number;
    sender_id: string;
    msg_id: string;
    endpoint_id: string;
    state: ReceiptState;
    reason: string;
    created_at: number;
  }>(SQL_PENDING_RECEIPTS, [senderId, afterReceiptId, limit]);
  return rows.map((x) => ({
    receiptId: x.receipt_id,
    senderId: x.sender_id,
    msgId: x.msg_id,
    endpointId: x.endpoint_id,
    state: x.state,
    reason: x.reason,
    atMs: x.created_at,
  }));
}

/** The earliest send_at of a scheduled message. */
export async function nextDueAt(r: PgReader): Promise<number | null> {
  return (await r.q<{ at: number | null }>(SQL_NEXT_DUE))[0].at;
}

/** The fields and body of message `seq`; null once the body is deleted. */
export async function frameSource(r: PgReader, seq: number): Promise<FrameSource | null> {
  const row = (await r.q<{
    id: string;
    sender_id: string;
    dest_kind: "endpoint" | "group";
    dest_id: string;
    body_enc: "utf8" | "base64";
    content_type: string;
    meta: string;
    send_at: number;
    body: Uint8Array;
  }>(SQL_FRAME_SOURCE, [seq]))[0];
  if (row === undefined) return null;
  return {
    id: row.id,
    senderId: row.sender_id,
    destKind: row.dest_kind,
    destId: row.dest_id,
    // A plain Uint8Array of its own, as node:sqlite gives: the driver's Buffer may be a slice of
    // a shared pool, which a cached frame would keep alive.
    body: new Uint8Array(row.body),
    bodyEnc: row.body_enc,
    contentType: row.content_type,
    meta: row.meta,
    sendAt: row.send_at,
  };
}
