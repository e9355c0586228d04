import {
  type AckReceiptArgs,
  DELIVERY_STATES,
  type DeliveryState,
  type MessageRow,
  type ReceiptRow,
  type ReceiptState,
} from "../../ops/receipts.ts";
import type { PgReader, PgTx } from "../op.ts";

// Receipts and the end of a message's life (spec 6.4, 7.6); the twin of
// server/store/ops/receipts.ts, with the loaders every messaging op shares.

/** The columns of a {@link MessageRow}, each prefixed by `alias` (`m.`) when given. */
export function messageColumns(alias = ""): string {
  return ["seq", "id", "sender_id", "dest_kind", "dest_id", "send_at", "keep", "ttl_seconds"]
    .concat(["receipt", "state", "reason"]).map((c) => alias + c).join(", ");
}
const MESSAGE_COLUMNS = messageColumns();
const SQL_MESSAGE_BY_SEQ = `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE seq = $1`;
const SQL_MESSAGE_BY_ID =
  `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE sender_id = $1 AND id = $2`;
// Written only while the sender exists (spec 7.6). The id comes from its counter row, locked to
// COMMIT, so receipt ids grow in commit order (schema_v1.ts).
const SQL_INSERT_RECEIPT = `WITH c AS (
    UPDATE id_counters SET n = n + 1 WHERE name = 'receipts'
      AND EXISTS (SELECT 1 FROM endpoints WHERE id = $1) RETURNING n)
  INSERT INTO receipts (receipt_id, sender_id, msg_id, endpoint_id, state, reason, created_at,
    acked) SELECT c.n, $1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint, 0 FROM c
  RETURNING receipt_id`;
const SQL_COMPLETE_IF_DONE = `UPDATE messages SET state = 'completed'
  WHERE seq = $1 AND state = 'dispatched'
    AND NOT EXISTS (SELECT 1 FROM deliveries WHERE seq = $1 AND state = 'pending')`;
const SQL_COMPLETE_EARLY = `UPDATE messages SET state = 'completed', reason = $1
  WHERE seq = $2 AND state = 'scheduled'`;
const SQL_DELETE_BODY = "DELETE FROM message_bodies WHERE seq = $1";
const SQL_DELETE_DELIVERIES = "DELETE FROM deliveries WHERE seq = $1";
const SQL_DELETE_MESSAGE = "DELETE FROM messages WHERE seq = $1";
// The mark and, whether or not it changed, whether the receipt exists: one statement.
const SQL_ACK_RECEIPT = `WITH u AS (UPDATE receipts SET acked = 1
    WHERE receipt_id = $1 AND sender_id = $2 AND acked = 0 RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM u) AS changed,
    EXISTS (SELECT 1 FROM receipts WHERE receipt_id = $1 AND sender_id = $2) AS found`;
const SQL_COUNT_BY_STATE =
  "SELECT state, count(*) AS n FROM deliveries WHERE seq = $1 GROUP BY state";

/** Reads a message by `seq`; undefined when its record is gone. */
export async function messageBySeq(t: PgReader, seq: number): Promise<MessageRow | undefined> {
  return (await t.q<MessageRow>(SQL_MESSAGE_BY_SEQ, [seq]))[0];
}

/** Reads a message by its sender and id; undefined when its record is gone. */
export async function messageById(
  t: PgReader,
  senderId: string,
  id: string,
): Promise<MessageRow | undefined> {
  return (await t.q<MessageRow>(SQL_MESSAGE_BY_ID, [senderId, id]))[0];
}

/** Deliveries of a message by state, every state present. */
export async function countDeliveries(
  t: PgReader,
  seq: number,
): Promise<Record<DeliveryState, number>> {
  const counts = Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<
    DeliveryState,
    number
  >;
  const rows = await t.q<{ state: DeliveryState; n: number }>(SQL_COUNT_BY_STATE, [seq]);
  for (const r of rows) counts[r.state] = r.n;
  return counts;
}

/** Writes the receipt of a final delivery state (or a message-level one, endpointId ""). */
export async function writeReceipt(
  t: PgTx,
  msg: MessageRow,
  endpointId: string,
  state: ReceiptState,
  reason: string,
  now: number,
): Promise<ReceiptRow | null> {
  if (msg.receipt !== 1) return null;
  const rows = await t.q<{ receipt_id: number }>(SQL_INSERT_RECEIPT, [
    msg.sender_id,
    msg.id,
    endpointId,
    state,
    reason,
    now,
  ]);
  if (rows.length === 0) return null;
  return {
    receiptId: rows[0].receipt_id,
    senderId: msg.sender_id,
    msgId: msg.id,
    endpointId,
    state,
    reason,
    atMs: now,
  };
}

/** {@link writeReceipt}, appending the receipt (if any) to `out`. */
export async function noteReceipt(
  t: PgTx,
  out: ReceiptRow[],
  msg: MessageRow,
  endpointId: string,
  state: ReceiptState,
  reason: string,
  now: number,
): Promise<void> {
  const receipt = await writeReceipt(t, msg, endpointId, state, reason, now);
  if (receipt !== null) out.push(receipt);
}

/** spec 7.6 收尾: completes a dispatched message with no pending delivery left. */
export async function finalize(t: PgTx, seq: number): Promise<boolean> {
  if ((await t.q(SQL_COMPLETE_IF_DONE, [seq])).count === 0) return false;
  dropCompleted(t, seq);
  return true;
}

/** Ends a message that never reached dispatch: `scheduled` -> `completed` with `reason`. */
export async function completeEarly(t: PgTx, seq: number, reason: string): Promise<boolean> {
  if ((await t.q(SQL_COMPLETE_EARLY, [reason, seq])).count === 0) return false;
  dropCompleted(t, seq);
  return true;
}

/** Sent without waiting: nothing of the op depends on their answers. */
function dropCompleted(t: PgTx, seq: number): void {
  t.send(SQL_DELETE_BODY, [seq]);
  dropRecords(t, seq);
}

/**
 * The part of {@link dropCompleted} after the body: the records, with no retention (spec 7.6);
 * `retentionDays` as the op found it.
 */
export function dropRecords(
  t: PgTx,
  seq: number,
  retentionDays = t.ctx.limits.recordRetentionDays,
): void {
  if (retentionDays === 0) {
    t.send(SQL_DELETE_DELIVERIES, [seq]);
    t.send(SQL_DELETE_MESSAGE, [seq]);
  }
}

/** `receipt.ack` (spec 6.4). */
export async function ackReceipt(
  t: PgTx,
  args: AckReceiptArgs,
  _now: number,
): Promise<{ ok: boolean }> {
  const answer = t.q<{ changed: boolean; found: boolean }>(
    SQL_ACK_RECEIPT,
    [args.receiptId, args.senderId],
    (rows) => rows[0].changed,
  );
  t.seal();
  const [{ changed, found }] = await answer;
  return { ok: changed || found };
}

/** The receipt ops. */
export const pgReceiptOps = {
  "receipt.ack": ackReceipt,
};
