import type {
  HousekeepingArgs,
  HousekeepingCursor,
  HousekeepingResult,
} from "../../ops/housekeeping.ts";
import type { PgTx } from "../op.ts";

// The hourly cleanup (spec 7.6 每小时清理); the twin of server/store/ops/housekeeping.ts.
// `keyRowid` of the cursor is `send_keys.key_id` here (PostgreSQL has no rowid).

const SQL_OLD_COMPLETED = `SELECT m.seq, m.send_at,
    coalesce((SELECT max(d.updated_at) FROM deliveries d WHERE d.seq = m.seq), m.send_at) AS done_at
  FROM messages m
  WHERE m.state = 'completed' AND m.send_at < $1 AND (m.send_at, m.seq) > ($2::bigint, $3::bigint)
  ORDER BY m.send_at, m.seq LIMIT $4`;
const SQL_DELETE_MESSAGES = "DELETE FROM messages WHERE seq = ANY($1::bigint[])";
const SQL_OLDEST_RECEIPTS =
  "SELECT receipt_id, created_at FROM receipts ORDER BY receipt_id LIMIT $1";
const SQL_DELETE_RECEIPTS_UPTO = "DELETE FROM receipts WHERE receipt_id <= $1";
const SQL_KEYS_AFTER = `SELECT k.key_id AS rid, k.created_at,
    EXISTS (SELECT 1 FROM messages m WHERE m.sender_id = k.sender_id AND m.id = k.msg_id) AS live
  FROM send_keys k WHERE k.key_id > $1 ORDER BY k.key_id LIMIT $2`;
const SQL_DELETE_KEYS = "DELETE FROM send_keys WHERE key_id = ANY($1::bigint[])";

const START: HousekeepingCursor = {
  messageSendAt: Number.MIN_SAFE_INTEGER,
  messageSeq: 0,
  keyRowid: 0,
};

interface Step {
  deleted: number;
  more: boolean;
}

/** `housekeeping.run` (spec 7.6): one batch of the hourly cleanup. */
export async function housekeeping(
  t: PgTx,
  args: HousekeepingArgs,
  now: number,
): Promise<HousekeepingResult> {
  const cursor = { ...(args.cursor ?? START) };
  const messages = await deleteMessages(t, now - args.recordRetentionMs, args.batch, cursor);
  const receipts = await deleteReceipts(t, now - args.receiptRetentionMs, args.batch);
  const keys = await deleteKeys(t, now - args.idempotencyMs, args.batch, cursor);
  return {
    deletedMessages: messages.deleted,
    deletedReceipts: receipts.deleted,
    deletedKeys: keys.deleted,
    more: messages.more || receipts.more || keys.more,
    cursor,
  };
}

async function deleteMessages(
  t: PgTx,
  cutoff: number,
  batch: number,
  cursor: HousekeepingCursor,
): Promise<Step> {
  const rows = await t.q<{ seq: number; send_at: number; done_at: number }>(SQL_OLD_COMPLETED, [
    cutoff,
    cursor.messageSendAt,
    cursor.messageSeq,
    batch,
  ]);
  const gone: number[] = [];
  for (const row of rows) {
    cursor.messageSendAt = row.send_at;
    cursor.messageSeq = row.seq;
    if (row.done_at < cutoff) gone.push(row.seq);
  }
  // Bodies and deliveries go with their message (ON DELETE CASCADE).
  if (gone.length > 0) await t.q(SQL_DELETE_MESSAGES, [gone]);
  return { deleted: gone.length, more: rows.length === batch };
}

async function deleteReceipts(t: PgTx, cutoff: number, batch: number): Promise<Step> {
  const rows = await t.q<{ receipt_id: number; created_at: number }>(SQL_OLDEST_RECEIPTS, [batch]);
  let last = -1;
  let deleted = 0;
  for (const row of rows) {
    if (row.created_at >= cutoff) break;
    last = row.receipt_id;
    deleted++;
  }
  if (deleted > 0) await t.q(SQL_DELETE_RECEIPTS_UPTO, [last]);
  return { deleted, more: deleted === batch };
}

async function deleteKeys(
  t: PgTx,
  cutoff: number,
  batch: number,
  cursor: HousekeepingCursor,
): Promise<Step> {
  const rows = await t.q<{ rid: number; created_at: number; live: boolean }>(SQL_KEYS_AFTER, [
    cursor.keyRowid,
    batch,
  ]);
  const gone: number[] = [];
  for (const row of rows) {
    cursor.keyRowid = row.rid;
    if (row.created_at < cutoff && !row.live) gone.push(row.rid);
  }
  if (gone.length > 0) await t.q(SQL_DELETE_KEYS, [gone]);
  return { deleted: gone.length, more: rows.length === batch };
}

/** The housekeeping ops. */
export const pgHousekeepingOps = {
  "housekeeping.run": housekeeping,
};
