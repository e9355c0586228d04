import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// The hourly cleanup (spec 7.6 每小时清理): expired records, receipts and idempotency keys,
// in batches so that no single op holds the write queue for long.
//
// Retention of a completed record starts when it completed. messages has no completion column,
// so that time is the last change of its deliveries (the change that completed it), or send_at
// for a message that completed with no delivery (sender_left, no_recipients at dispatch; and,
// kept a little longer than strictly needed, one recalled or voided before its send time).
// Both are never earlier than send_at, so `send_at < cutoff` narrows the scan on
// idx_messages_due.

const SQL_OLD_COMPLETED = `SELECT m.seq, m.send_at,
    coalesce((SELECT max(d.updated_at) FROM deliveries d WHERE d.seq = m.seq), m.send_at) AS done_at
  FROM messages m
  WHERE m.state = 'completed' AND m.send_at < ? AND (m.send_at, m.seq) > (?, ?)
  ORDER BY m.send_at, m.seq LIMIT ?`;
const SQL_DELETE_BODY = "DELETE FROM message_bodies WHERE seq = ?";
const SQL_DELETE_DELIVERIES = "DELETE FROM deliveries WHERE seq = ?";
const SQL_DELETE_MESSAGE = "DELETE FROM messages WHERE seq = ?";
const SQL_OLDEST_RECEIPTS =
  "SELECT receipt_id, created_at FROM receipts ORDER BY receipt_id LIMIT ?";
const SQL_DELETE_RECEIPTS_UPTO = "DELETE FROM receipts WHERE receipt_id <= ?";
const SQL_KEYS_AFTER = `SELECT k.rowid AS rid, k.created_at,
    EXISTS (SELECT 1 FROM messages m WHERE m.sender_id = k.sender_id AND m.id = k.msg_id) AS live
  FROM send_keys k WHERE k.rowid > ? ORDER BY k.rowid LIMIT ?`;
const SQL_DELETE_KEY = "DELETE FROM send_keys WHERE rowid = ?";

/** Where the previous call of one hourly run stopped; pass it back unchanged. */
export interface HousekeepingCursor {
  messageSendAt: number;
  messageSeq: number;
  keyRowid: number;
}

/** Args of `housekeeping.run`. */
export interface HousekeepingArgs {
  /** At most this many rows examined per table per call. */
  batch: number;
  /** `record_retention_days` in ms. */
  recordRetentionMs: number;
  /** `receipt_retention_days` in ms; acked or not. */
  receiptRetentionMs: number;
  /** `idempotency_hours` in ms. */
  idempotencyMs: number;
  /** Absent or null on the first call of a run; then the `cursor` of the previous result. */
  cursor?: HousekeepingCursor | null;
}

/** Result of `housekeeping.run`. */
export interface HousekeepingResult {
  deletedMessages: number;
  deletedReceipts: number;
  deletedKeys: number;
  /** Call again with `cursor`; when false, run `PRAGMA wal_checkpoint(TRUNCATE)`. */
  more: boolean;
  cursor: HousekeepingCursor;
}

/**
 * `housekeeping.run` (spec 7.6): one batch of the hourly cleanup. Deletes completed message
 * records (with bodies and deliveries) older than the record retention, receipts older than the
 * receipt retention, and idempotency keys older than `idempotencyMs` whose record is gone.
 *
 * @example
 * ```ts
 * let cursor = null;
 * for (let more = true; more;) {
 *   const r = await writer.run("housekeeping.run", { ...retention, batch: 2000, cursor });
 *   ({ more, cursor } = r);
 * }
 * ```
 */
export function housekeeping(
  db: DatabaseSync,
  args: HousekeepingArgs,
  now: number,
): HousekeepingResult {
  const cursor = { ...(args.cursor ?? START) };
  // Messages first: keys whose record goes now may go in the same call.
  const messages = deleteMessages(db, now - args.recordRetentionMs, args.batch, cursor);
  const receipts = deleteReceipts(db, now - args.receiptRetentionMs, args.batch);
  const keys = deleteKeys(db, now - args.idempotencyMs, args.batch, cursor);
  return {
    deletedMessages: messages.deleted,
    deletedReceipts: receipts.deleted,
    deletedKeys: keys.deleted,
    more: messages.more || receipts.more || keys.more,
    cursor,
  };
}

const START: HousekeepingCursor = {
  messageSendAt: Number.MIN_SAFE_INTEGER,
  messageSeq: 0,
  keyRowid: 0,
};

interface Step {
  deleted: number;
  more: boolean;
}

function deleteMessages(
  db: DatabaseSync,
  cutoff: number,
  batch: number,
  cursor: HousekeepingCursor,
): Step {
  const rows = prepareCached(db, SQL_OLD_COMPLETED).all(
    cutoff,
    cursor.messageSendAt,
    cursor.messageSeq,
    batch,
  ) as {
    seq: number;
    send_at: number;
    done_at: number;
  }[];
  let deleted = 0;
  for (const row of rows) {
    cursor.messageSendAt = row.send_at;
    cursor.messageSeq = row.seq;
    if (row.done_at >= cutoff) continue;
    prepareCached(db, SQL_DELETE_BODY).run(row.seq);
    prepareCached(db, SQL_DELETE_DELIVERIES).run(row.seq);
    prepareCached(db, SQL_DELETE_MESSAGE).run(row.seq);
    deleted++;
  }
  return { deleted, more: rows.length === batch };
}

function deleteReceipts(db: DatabaseSync, cutoff: number, batch: number): Step {
  // receipt_id grows with time: delete the oldest prefix that is past the cutoff.
  const rows = prepareCached(db, SQL_OLDEST_RECEIPTS).all(batch) as {
    receipt_id: number;
    created_at: number;
  }[];
  let last = -1;
  let deleted = 0;
  for (const row of rows) {
    if (row.created_at >= cutoff) break;
    last = row.receipt_id;
    deleted++;
  }
  if (deleted > 0) prepareCached(db, SQL_DELETE_RECEIPTS_UPTO).run(last);
  return { deleted, more: deleted === batch };
}

function deleteKeys(
  db: DatabaseSync,
  cutoff: number,
  batch: number,
  cursor: HousekeepingCursor,
): Step {
  // spec 7.6: only keys past idempotency_hours whose message record is already gone.
  const rows = prepareCached(db, SQL_KEYS_AFTER).all(cursor.keyRowid, batch) as {
    rid: number;
    created_at: number;
    live: number;
  }[];
  let deleted = 0;
  for (const row of rows) {
    cursor.keyRowid = row.rid;
    if (row.created_at >= cutoff || row.live === 1) continue;
    prepareCached(db, SQL_DELETE_KEY).run(row.rid);
    deleted++;
  }
  return { deleted, more: rows.length === batch };
}

/** The housekeeping ops, merged into the writer's registry in `mod.ts`. */
export const housekeepingOps = {
  "housekeeping.run": housekeeping,
};
