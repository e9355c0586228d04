import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { openDb } from "./db.ts";
import {
  backupTimestamp,
  currentVersion,
  migrate,
  type Migration,
  MigrationError,
  MIGRATIONS,
  SCHEMA_VERSION,
} from "./migrations.ts";

// spec 7.7, in order.
const TABLES = [
  "endpoints",
  "settings",
  "talk_grants",
  "groups",
  "group_members",
  "messages",
  "message_bodies",
  "deliveries",
  "receipts",
  "send_keys",
  "admin_sessions",
  "api_tokens",
  "schema_migrations",
  "quota_counts",
  "audit_log",
  "nodes",
  "webhooks",
  "failure_counters",
];
const INDEXES = [
  "idx_messages_due",
  "idx_messages_dest",
  "idx_messages_created",
  "idx_messages_sender",
  "idx_messages_sender_state",
  "idx_deliveries_outbox",
  "idx_deliveries_expire",
  "idx_deliveries_finished",
  "idx_receipts_outbox",
  "idx_talk_grants_target",
  "idx_group_members_endpoint",
  "idx_audit_at",
  "idx_deliveries_hook_revoked",
  "idx_failure_counters_expires",
];
const NOW = Date.UTC(2026, 10, 29, 21, 15, 0);
/** The first release's migrations: the generic tests upgrade from it with the fake {@link V2}. */
const V1_ONLY: readonly Migration[] = MIGRATIONS.slice(0, 1);
const V2: Migration = {
  version: 2,
  name: "add notes",
  sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
};

function names(db: DatabaseSync, type: "table" | "index"): string[] {
  const rows = db.prepare(
    "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
  ).all(type) as { name: string }[];
  return rows.map((r) => r.name);
}

async function withDir(fn: (dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-migrate-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function readDb<T>(path: string, fn: (db: DatabaseSync) => T): T {
  const db = openDb(path, { readOnly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

Deno.test("a new database gets every table and index of spec 7.7 without a backup", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    const result = await migrate(path, { backupDir: join(dir, "backup"), now: NOW });
    assert.deepEqual(result, { from: 0, to: 11, backupPath: null });
    assert.equal(SCHEMA_VERSION, 11);
    assert.deepEqual(MIGRATIONS.map((m) => m.version), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert.equal(existsSync(join(dir, "backup")), false);
    readDb(path, (db) => {
      // Migration 2 rebuilt two tables, which moves them in sqlite_master: compare as sets.
      assert.deepEqual(names(db, "table").sort(), [...TABLES].sort());
      assert.deepEqual(names(db, "index").sort(), [...INDEXES].sort());
      assert.equal(currentVersion(db), 11);
      const rows = db.prepare("SELECT version, applied_at FROM schema_migrations ORDER BY version")
        .all();
      assert.deepEqual(rows.map((r) => ({ ...r })), [
        { version: 1, applied_at: NOW },
        { version: 2, applied_at: NOW },
        { version: 3, applied_at: NOW },
        { version: 4, applied_at: NOW },
        { version: 5, applied_at: NOW },
        { version: 6, applied_at: NOW },
        { version: 7, applied_at: NOW },
        { version: 8, applied_at: NOW },
        { version: 9, applied_at: NOW },
        { version: 10, applied_at: NOW },
        { version: 11, applied_at: NOW },
      ]);
    });
  }));

Deno.test("an up-to-date database is left alone", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    await migrate(path, { backupDir: join(dir, "backup"), now: NOW });
    const again = await migrate(path, { backupDir: join(dir, "backup"), now: NOW + 1 });
    assert.deepEqual(again, { from: 11, to: 11, backupPath: null });
    assert.equal(existsSync(join(dir, "backup")), false);
  }));

Deno.test("an upgrade first copies the old database to backup/pre-migrate-<time>.db", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    const backupDir = join(dir, "backup");
    await migrate(path, { backupDir, now: NOW, migrations: V1_ONLY });
    const db = openDb(path);
    db.exec("INSERT INTO settings (key, value, updated_at) VALUES ('registration_code', 'c', 1)");
    db.close();

    const result = await migrate(path, { backupDir, now: NOW, migrations: [...V1_ONLY, V2] });
    const backupPath = join(backupDir, "pre-migrate-20261129T211500Z.db");
    assert.deepEqual(result, { from: 1, to: 2, backupPath });
    readDb(path, (db) => {
      assert.equal(currentVersion(db), 2);
      assert.ok(names(db, "table").includes("notes"));
    });
    // The backup is the database as it was: version 1, with its rows, and no notes table.
    readDb(backupPath, (db) => {
      assert.equal(currentVersion(db), 1);
      assert.equal(names(db, "table").includes("notes"), false);
      assert.equal((db.prepare("SELECT count(*) AS n FROM settings").get() as { n: number }).n, 1);
    });
  }));

Deno.test("two upgrades in the same second get distinct backup files", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    const backupDir = join(dir, "backup");
    await migrate(path, { backupDir, now: NOW, migrations: V1_ONLY });
    const first = await migrate(path, { backupDir, now: NOW, migrations: [...V1_ONLY, V2] });
    const v3 = { version: 3, name: "more", sql: "CREATE TABLE more (x INTEGER)" };
    const second = await migrate(path, { backupDir, now: NOW, migrations: [...V1_ONLY, V2, v3] });
    assert.equal(first.backupPath, join(backupDir, "pre-migrate-20261129T211500Z.db"));
    assert.equal(second.backupPath, join(backupDir, "pre-migrate-20261129T211500Z-1.db"));
    assert.equal(readDb(second.backupPath!, currentVersion), 2);
  }));

Deno.test("a database newer than this build is refused", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    await migrate(path, { backupDir: join(dir, "backup"), now: NOW });
    const db = openDb(path);
    db.exec("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)");
    db.close();
    await assert.rejects(
      () => migrate(path, { backupDir: join(dir, "backup") }),
      (err: unknown) =>
        err instanceof MigrationError &&
        err.message ===
          `Database schema version 99 is newer than this build supports (${SCHEMA_VERSION})`,
    );
    assert.equal(existsSync(join(dir, "backup")), false);
  }));

Deno.test("a failing migration leaves the database at its old version and usable", () =>
  withDir(async (dir) => {
    const path = join(dir, "nixmsg.db");
    const backupDir = join(dir, "backup");
    await migrate(path, { backupDir, now: NOW, migrations: V1_ONLY });
    const broken: Migration = {
      version: 2,
      name: "broken",
      // The first statement succeeds; the second fails, so the rollback must undo the first.
      sql: "CREATE TABLE half (x INTEGER); ALTER TABLE missing ADD COLUMN y INTEGER",
    };
    await assert.rejects(
      () => migrate(path, { backupDir, now: NOW, migrations: [...V1_ONLY, broken] }),
      (err: unknown) =>
        err instanceof MigrationError && /^Migration 2 \(broken\) failed: /.test(err.message),
    );
    const db = openDb(path);
    try {
      assert.equal(currentVersion(db), 1);
      assert.equal(names(db, "table").includes("half"), false);
      assert.equal(db.isTransaction, false);
      db.exec("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 1)");
    } finally {
      db.close();
    }
    // A fixed build migrates the same database normally afterwards.
    assert.equal((await migrate(path, { backupDir, migrations: [...V1_ONLY, V2] })).to, 2);
  }));

Deno.test("migrations out of order are refused", () =>
  withDir(async (dir) => {
    await assert.rejects(
      () => migrate(join(dir, "x.db"), { backupDir: dir, migrations: [V2, MIGRATIONS[0]] }),
      /Migration 1 \(initial schema\) is out of order/,
    );
  }));

Deno.test("backupTimestamp() formats UTC as yyyymmddThhmmssZ", () => {
  assert.equal(backupTimestamp(NOW), "20261129T211500Z");
  assert.equal(backupTimestamp(Date.UTC(2027, 0, 2, 3, 4, 5, 678)), "20270102T030405Z");
});
