// Migration 4: exact counters for the send quotas (spec 7.3 step 3, spec 7.4 step 1).
//
// `max_pending_per_sender` counts a sender's unfinished messages (scheduled or dispatched) and
// `max_pending_per_receiver` a receiver's pending deliveries. Both were checked by walking the
// index up to the limit (10,000 by default) on every `send` and every recipient's dispatch: 4 µs
// with 32 pending, 674 µs with 10,000 (docs/BENCHMARKS.md). `quota_counts` holds the two counts,
// and triggers keep them exact on every INSERT, UPDATE and DELETE of `messages` and `deliveries`
// (foreign-key cascades included), so no code path can forget one. The quota check is then one
// primary-key read. A row may stay at n = 0.

/** The SQL of migration 4. */
export const SCHEMA_V4_SQL = `
CREATE TABLE quota_counts (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (kind, id)
) WITHOUT ROWID;

INSERT INTO quota_counts (kind, id, n)
  SELECT 'sender', sender_id, count(*) FROM messages
  WHERE state IN ('scheduled', 'dispatched') GROUP BY sender_id;
INSERT INTO quota_counts (kind, id, n)
  SELECT 'receiver', endpoint_id, count(*) FROM deliveries
  WHERE state = 'pending' GROUP BY endpoint_id;

CREATE TRIGGER quota_message_insert AFTER INSERT ON messages
  WHEN NEW.state IN ('scheduled', 'dispatched')
BEGIN
  INSERT INTO quota_counts (kind, id, n) VALUES ('sender', NEW.sender_id, 1)
    ON CONFLICT (kind, id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER quota_message_update AFTER UPDATE OF state, sender_id ON messages
  WHEN (OLD.state IN ('scheduled', 'dispatched')) <> (NEW.state IN ('scheduled', 'dispatched'))
    OR OLD.sender_id IS NOT NEW.sender_id
BEGIN
  UPDATE quota_counts SET n = n - 1
    WHERE kind = 'sender' AND id = OLD.sender_id AND OLD.state IN ('scheduled', 'dispatched');
  INSERT INTO quota_counts (kind, id, n)
    SELECT 'sender', NEW.sender_id, 1 WHERE NEW.state IN ('scheduled', 'dispatched')
    ON CONFLICT (kind, id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER quota_message_delete AFTER DELETE ON messages
  WHEN OLD.state IN ('scheduled', 'dispatched')
BEGIN
  UPDATE quota_counts SET n = n - 1 WHERE kind = 'sender' AND id = OLD.sender_id;
END;

CREATE TRIGGER quota_delivery_insert AFTER INSERT ON deliveries
  WHEN NEW.state = 'pending'
BEGIN
  INSERT INTO quota_counts (kind, id, n) VALUES ('receiver', NEW.endpoint_id, 1)
    ON CONFLICT (kind, id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER quota_delivery_update AFTER UPDATE OF state, endpoint_id ON deliveries
  WHEN (OLD.state = 'pending') <> (NEW.state = 'pending')
    OR OLD.endpoint_id IS NOT NEW.endpoint_id
BEGIN
  UPDATE quota_counts SET n = n - 1
    WHERE kind = 'receiver' AND id = OLD.endpoint_id AND OLD.state = 'pending';
  INSERT INTO quota_counts (kind, id, n)
    SELECT 'receiver', NEW.endpoint_id, 1 WHERE NEW.state = 'pending'
    ON CONFLICT (kind, id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER quota_delivery_delete AFTER DELETE ON deliveries
  WHEN OLD.state = 'pending'
BEGIN
  UPDATE quota_counts SET n = n - 1 WHERE kind = 'receiver' AND id = OLD.endpoint_id;
END;
`;
