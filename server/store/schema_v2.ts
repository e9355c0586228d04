// Migration 2: `messages.seq` and `receipts.receipt_id` become AUTOINCREMENT, so SQLite never
// hands out an id again once the newest rows are deleted (record_retention_days 0 deletes a
// message as it completes; housekeeping deletes old receipts). A reused receipt_id is skipped by
// a long-lived connection's receipt pusher (it asks for ids above the highest it sent) and
// swallowed by the SDK's dedup by receipt_id.
//
// SQLite cannot add AUTOINCREMENT to a column, so both tables are rebuilt (the "12 steps" of
// https://www.sqlite.org/lang_altertable.html): create the new table, copy every row with its
// id, drop the old one, rename, recreate the indexes. `migrate` runs this with foreign keys off
// (DROP TABLE would otherwise cascade into deliveries and message_bodies) and checks them before
// COMMIT.
//
// Ids handed out before this migration and deleted since are unknown, and a client may still
// remember them (the SDK dedups receipts by receipt_id across reconnects). So on a database that
// was in use, both sequences restart above the current time in ms: more ids than milliseconds
// since 1970 were never handed out. A new database (no endpoint, message or receipt) starts at 1.

/** The SQL of migration 2. */
export const SCHEMA_V2_SQL = `
CREATE TABLE messages_v2 (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  sender_id TEXT NOT NULL,
  dest_kind TEXT NOT NULL,
  dest_id TEXT NOT NULL,
  meta TEXT NOT NULL DEFAULT '{}',
  content_type TEXT NOT NULL,
  body_enc TEXT NOT NULL,
  send_at INTEGER NOT NULL,
  keep INTEGER NOT NULL,
  ttl_seconds INTEGER NOT NULL DEFAULT 0,
  receipt INTEGER NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  UNIQUE (sender_id, id)
);
INSERT INTO messages_v2 (seq, id, sender_id, dest_kind, dest_id, meta, content_type, body_enc,
    send_at, keep, ttl_seconds, receipt, state, reason, created_at)
  SELECT seq, id, sender_id, dest_kind, dest_id, meta, content_type, body_enc,
    send_at, keep, ttl_seconds, receipt, state, reason, created_at
  FROM messages ORDER BY seq;
DROP TABLE messages;
ALTER TABLE messages_v2 RENAME TO messages;
CREATE INDEX idx_messages_due ON messages(state, send_at);
CREATE INDEX idx_messages_dest ON messages(dest_kind, dest_id, state);
CREATE INDEX idx_messages_created ON messages(created_at);
CREATE INDEX idx_messages_sender ON messages(sender_id, created_at);
CREATE INDEX idx_messages_sender_state ON messages(sender_id, state);

CREATE TABLE receipts_v2 (
  receipt_id INTEGER PRIMARY KEY AUTOINCREMENT,
  sender_id TEXT NOT NULL,
  msg_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  acked INTEGER NOT NULL DEFAULT 0
);
INSERT INTO receipts_v2 (receipt_id, sender_id, msg_id, endpoint_id, state, reason, created_at,
    acked)
  SELECT receipt_id, sender_id, msg_id, endpoint_id, state, reason, created_at, acked
  FROM receipts ORDER BY receipt_id;
DROP TABLE receipts;
ALTER TABLE receipts_v2 RENAME TO receipts;
CREATE INDEX idx_receipts_outbox ON receipts(sender_id, acked, receipt_id);

DELETE FROM sqlite_sequence WHERE name IN ('messages', 'receipts');
INSERT INTO sqlite_sequence (name, seq)
  WITH used (lowest) AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM endpoints) OR EXISTS (SELECT 1 FROM messages)
        OR EXISTS (SELECT 1 FROM receipts)
      THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) ELSE 0 END
  )
  SELECT 'messages', max(coalesce((SELECT max(seq) FROM messages), 0), lowest) FROM used
  UNION ALL
  SELECT 'receipts', max(coalesce((SELECT max(receipt_id) FROM receipts), 0), lowest) FROM used;
`;
