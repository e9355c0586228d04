import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import type { Logger } from "../log/log.ts";
import { openDb } from "./db.ts";
import { copyDatabase } from "./backup.ts";
import { crashPoint } from "../config/crash_point.ts";
import { SCHEMA_V1_SQL } from "./schema_v1.ts";
import { SCHEMA_V2_SQL } from "./schema_v2.ts";
import { SCHEMA_V4_SQL } from "./schema_v4.ts";

// Migration 3: the console's live overview (server/metrics/history.ts) counts the deliveries
// that finished in each 10 s window by `updated_at`. Without an index that walked every delivery
// kept (days of them) on the main thread every 10 s. The index is partial: pending deliveries
// (updated on every push) never enter it, so a delivery costs one index entry, when it ends.
const SCHEMA_V3_SQL = `
CREATE INDEX idx_deliveries_finished ON deliveries(updated_at) WHERE state <> 'pending';
`;

// Migration 5: five indexes keep only the rows their queries read (docs/DEVIATIONS.md).
// - `idx_messages_dest` and `idx_messages_sender_state` serve only the search for the *scheduled*
//   messages of an endpoint or group when it is deleted or disabled (ops/invalidate.ts). A message
//   sent for now is stored `dispatched` and ends `completed`: it never enters them.
// - `idx_deliveries_outbox` and `idx_deliveries_expire` serve only *pending* deliveries (claims,
//   expiry, reconnect grace, recovery): a delivery leaves them when it ends, and the ended ones
//   kept for days no longer fill them.
// - `idx_receipts_outbox` serves only receipts the sender has not acknowledged (the receipt push,
//   and deleting them with their sender).
const SCHEMA_V5_SQL = `
DROP INDEX idx_messages_dest;
DROP INDEX idx_messages_sender_state;
CREATE INDEX idx_messages_dest ON messages(dest_kind, dest_id) WHERE state = 'scheduled';
CREATE INDEX idx_messages_sender_state ON messages(sender_id) WHERE state = 'scheduled';
DROP INDEX idx_deliveries_outbox;
DROP INDEX idx_deliveries_expire;
CREATE INDEX idx_deliveries_outbox ON deliveries(endpoint_id, send_at, seq) WHERE state = 'pending';
CREATE INDEX idx_deliveries_expire ON deliveries(expire_at) WHERE state = 'pending';
DROP INDEX idx_receipts_outbox;
CREATE INDEX idx_receipts_outbox ON receipts(sender_id, receipt_id) WHERE acked = 0;
`;

// Migration 6: the audit log (spec 8, 14 M4 操作日志): one row per state-changing admin request,
// CLI action and security event, kept `audit_retention_days` (housekeeping, `audit.prune`).
// The list reads newest first by id; `idx_audit_at` serves the time filters and the pruning.
const SCHEMA_V6_SQL = `
CREATE TABLE audit_log (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  at      INTEGER NOT NULL,
  actor   TEXT NOT NULL,
  action  TEXT NOT NULL,
  target  TEXT NOT NULL DEFAULT '',
  result  TEXT NOT NULL,
  ip      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX idx_audit_at ON audit_log(at);
`;

// Migration 7 (issue 30): node leases.
// A node renews its row while it runs; a row whose `lease_until` has passed is a dead node.
const SCHEMA_V7_SQL = `
CREATE TABLE nodes (
  node_id TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  renewed_at INTEGER NOT NULL
);
`;

// Migration 8 (issue 34): webhooks. One webhook per endpoint; its secret is stored as it was
// shown (HMAC needs it back; docs/DEVIATIONS.md). `hook_due` is the durable due time of the next
// webhook attempt: on a pending delivery the next `msg` POST (while one is in flight, the end of
// its lease), on an ended, not accepted delivery the `revoked` event still owed, on a receipt the
// next `receipt` POST. NULL: never attempted (due now) or nothing owed.
const SCHEMA_V8_SQL = `
CREATE TABLE webhooks (
  endpoint_id TEXT PRIMARY KEY REFERENCES endpoints(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  secret TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
ALTER TABLE deliveries ADD COLUMN hook_due INTEGER;
ALTER TABLE receipts ADD COLUMN hook_due INTEGER;
CREATE INDEX idx_deliveries_hook_revoked ON deliveries(endpoint_id, hook_due)
  WHERE hook_due IS NOT NULL AND state NOT IN ('pending', 'accepted');
`;

// Migration 9 (issue 30): the cluster node that holds an endpoint's current login, set by its
// handshake and cleared when it goes offline, so that a dead node's endpoints can be marked
// offline by the node that reaps it. NULL on a single node.
const SCHEMA_V9_SQL = `
ALTER TABLE endpoints ADD COLUMN online_node TEXT;
`;

// Migration 10 (issue 30 items 4 and 6): the lockouts' failure counters, shared by the nodes of a
// cluster (server/store/ops/lockouts.ts). `expires_at`: when the row no longer matters (the end
// of its lock or of its window), for pruning. A node's lease also tells how many connections it
// held at its last renewal, for the console's nodes page.
const SCHEMA_V10_SQL = `
CREATE TABLE failure_counters (
  key TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  locked_until INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX idx_failure_counters_expires ON failure_counters(expires_at);
ALTER TABLE nodes ADD COLUMN connections INTEGER NOT NULL DEFAULT 0;
`;

// Migration 11 (issue 30): admin closes that a cluster node's store poll finds without NATS. An
// admin disable, password reset or kick records the endpoint's login revision at that moment
// (`online_since`) in `closed_through` and why in `closed_reason` ('disabled', 'password_reset',
// 'kick'): every connection that logged in at or before that revision must close. A later login
// has a later revision and stays. NULL when nothing was closed.
const SCHEMA_V11_SQL = `
ALTER TABLE endpoints ADD COLUMN closed_through INTEGER;
ALTER TABLE endpoints ADD COLUMN closed_reason TEXT;
`;

/** One embedded schema step (spec 7.7: migrations are embedded, ordered SQL). */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every migration of this build, oldest first. Append; never edit a released entry. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial schema", sql: SCHEMA_V1_SQL },
  { version: 2, name: "AUTOINCREMENT message seq and receipt id", sql: SCHEMA_V2_SQL },
  { version: 3, name: "finished deliveries by update time", sql: SCHEMA_V3_SQL },
  { version: 4, name: "exact send quota counters", sql: SCHEMA_V4_SQL },
  { version: 5, name: "indexes that hold only the rows their queries read", sql: SCHEMA_V5_SQL },
  { version: 6, name: "audit log", sql: SCHEMA_V6_SQL },
  { version: 7, name: "node leases", sql: SCHEMA_V7_SQL },
  { version: 8, name: "webhooks", sql: SCHEMA_V8_SQL },
  { version: 9, name: "the node holding an endpoint", sql: SCHEMA_V9_SQL },
  { version: 10, name: "failure counters, node connections", sql: SCHEMA_V10_SQL },
  { version: 11, name: "admin closes by login revision", sql: SCHEMA_V11_SQL },
];

/** The schema version this build expects. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;

/** A migration was refused or failed; the server must exit rather than serve (spec 7.7). */
export class MigrationError extends Error {
  override name = "MigrationError";
}

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** Where `pre-migrate-<time>.db` goes, normally `<data_dir>/backup` (spec 7.7). */
  backupDir: string;
  /** Clock for `applied_at` and the backup name, in ms since the epoch. */
  now?: number;
  /** Replaces {@link MIGRATIONS}; for tests. */
  migrations?: readonly Migration[];
  log?: Logger;
}

/** What {@link migrate} did. */
export interface MigrateResult {
  from: number;
  to: number;
  /** The pre-migration copy, or null when nothing was copied (new database or up to date). */
  backupPath: string | null;
}

const SQL_HAS_MIGRATIONS_TABLE =
  "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'";
const SQL_CURRENT_VERSION = "SELECT coalesce(max(version), 0) AS version FROM schema_migrations";
const SQL_COUNT_OBJECTS = "SELECT count(*) AS n FROM sqlite_master";
const SQL_INSERT_VERSION = "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)";
const SQL_FOREIGN_KEY_CHECK = "PRAGMA foreign_key_check";

/**
 * Brings the database at `dbPath` up to the newest version in `migrations`.
 *
 * - A new, empty database is migrated without a backup.
 * - An existing database with pending migrations is first copied (SQLite's backup API) to
 *   `<backupDir>/pre-migrate-<yyyymmddThhmmssZ>.db` (spec 7.7).
 * - A database newer than this build is refused.
 * - All pending migrations run in one transaction, each with its `schema_migrations` row, so a
 *   failure leaves the database exactly as it was.
 *
 * @throws {MigrationError} when the database is too new or a migration fails.
 * @example
 * ```ts
 * const { from, to } = await migrate("data/nixmsg.db", { backupDir: "data/backup" });
 * ```
 */
export async function migrate(dbPath: string, opts: MigrateOptions): Promise<MigrateResult> {
  const migrations = opts.migrations ?? MIGRATIONS;
  checkOrder(migrations);
  const target = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version;
  const now = opts.now ?? Date.now();

  const db = openDb(dbPath);
  try {
    const from = currentVersion(db);
    if (from > target) {
      throw new MigrationError(
        `Database schema version ${from} is newer than this build supports (${target})`,
      );
    }
    const pending = migrations.filter((m) => m.version > from);
    if (pending.length === 0) return { from, to: from, backupPath: null };

    const empty = (db.prepare(SQL_COUNT_OBJECTS).get() as { n: number }).n === 0;
    const backupPath = empty ? null : await backup(db, opts.backupDir, now);
    applyAll(db, pending, now);
    opts.log?.info("Database migrated", { from, to: target, backup: backupPath });
    return { from, to: target, backupPath };
  } finally {
    db.close();
  }
}

/** Reads the schema version of an open database; 0 when it has no `schema_migrations`. */
export function currentVersion(db: DatabaseSync): number {
  if (db.prepare(SQL_HAS_MIGRATIONS_TABLE).get() === undefined) return 0;
  return (db.prepare(SQL_CURRENT_VERSION).get() as { version: number }).version;
}

/** Formats `now` as `20261129T211500Z` for backup file names. */
export function backupTimestamp(now: number): string {
  return new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}Z$/, "Z");
}

function checkOrder(migrations: readonly Migration[]): void {
  let last = 0;
  for (const m of migrations) {
    if (!Number.isInteger(m.version) || m.version <= last) {
      throw new MigrationError(`Migration ${m.version} (${m.name}) is out of order`);
    }
    last = m.version;
  }
}

async function backup(db: DatabaseSync, backupDir: string, now: number): Promise<string> {
  mkdirSync(backupDir, { recursive: true });
  const base = join(backupDir, `pre-migrate-${backupTimestamp(now)}`);
  // Two upgrades within one second must not collide, nor overwrite an earlier copy.
  let path = `${base}.db`;
  for (let n = 1; existsSync(path); n++) path = `${base}-${n}.db`;
  try {
    await copyDatabase(db, path);
  } catch (err) {
    throw new MigrationError(`Backup before migration failed: ${messageOf(err)}`, { cause: err });
  }
  return path;
}

function applyAll(db: DatabaseSync, pending: readonly Migration[], now: number): void {
  // Table rebuilds (migration 2) drop a parent table; with foreign keys on that would delete
  // every child row. They are off while migrating and checked before the COMMIT instead. The
  // pragma cannot change inside a transaction, so it is set around it.
  db.exec("PRAGMA foreign_keys = OFF");
  db.exec("BEGIN IMMEDIATE");
  let current: Migration | undefined;
  try {
    for (const m of pending) {
      current = m;
      db.exec(m.sql);
      crashPoint("migration");
      // Prepared after the SQL: migration 1 creates schema_migrations itself.
      db.prepare(SQL_INSERT_VERSION).run(m.version, now);
    }
    current = undefined;
    const broken = db.prepare(SQL_FOREIGN_KEY_CHECK).all();
    if (broken.length > 0) {
      throw new Error(
        `${broken.length} rows violate foreign keys, e.g. ${JSON.stringify(broken[0])}`,
      );
    }
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    const what = current === undefined ? "Commit of migrations" : `Migration ${current.version}`;
    const name = current === undefined ? "" : ` (${current.name})`;
    throw new MigrationError(`${what}${name} failed: ${messageOf(err)}`, { cause: err });
  } finally {
    db.exec("PRAGMA foreign_keys = ON");
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
