// Migration 2 (issue 10 item 7): messages.seq and receipts.receipt_id become AUTOINCREMENT. A
// populated version-1 database is copied (SQLite backup API) first, upgrades with every row intact,
// and never hands out an id again, not even one deleted before the upgrade.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { openDb } from "./db.ts";
import { currentVersion, migrate, MIGRATIONS, SCHEMA_VERSION } from "./migrations.ts";
import { configure, resetOpsContext } from "./ops/context.ts";
import { ackDelivery, claimDeliveries } from "./ops/deliveries.ts";
import { addEndpoint, binaryArgs, T0 } from "./ops/_testing.ts";
import { submitMessage } from "./ops/messages.ts";

const TABLES = [
  "endpoints",
  "settings",
  "messages",
  "message_bodies",
  "deliveries",
  "receipts",
  "send_keys",
];

/** Every row of `table`, in primary-key order, as plain objects. */
function dump(db: DatabaseSync, table: string): unknown[] {
  return db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all().map((r) => ({ ...r }));
}

function dumpAll(db: DatabaseSync): Record<string, unknown[]> {
  return Object.fromEntries(TABLES.map((t) => [t, dump(db, t)]));
}

/**
 * `after` with only the columns each table had in `before`: columns that later migrations added
 * (e.g. `hook_due` of migration 8) are checked on their own.
 */
function v1Columns(
  after: Record<string, unknown[]>,
  before: Record<string, unknown[]>,
): Record<string, unknown[]> {
  return Object.fromEntries(
    Object.entries(after).map(([table, rows]) => {
      const keys = Object.keys((before[table]?.[0] ?? {}) as Record<string, unknown>);
      if (keys.length === 0) return [table, rows];
      return [
        table,
        rows.map((r) =>
          Object.fromEntries(keys.map((k) => [k, (r as Record<string, unknown>)[k]]))
        ),
      ];
    }),
  );
}

function maxId(db: DatabaseSync, sql: string): number {
  return (db.prepare(sql).get() as { n: number | null }).n ?? 0;
}

/** A version-1 database with endpoints, messages (with bodies and deliveries) and receipts. */
async function populatedV1(
  path: string,
  backupDir: string,
): Promise<{ deletedSeq: number; deletedReceipt: number }> {
  await migrate(path, { backupDir, migrations: MIGRATIONS.slice(0, 1), now: T0 });
  const db = openDb(path);
  try {
    resetOpsContext();
    // Version 1 has no quota counters (migration 4): fill it as a build without quotas would.
    configure(db, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, T0);
    for (const id of ["a", "b", "c"]) addEndpoint(db, id);
    db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('registration_code', 'x', 1)")
      .run();
    for (let i = 1; i <= 6; i++) {
      submitMessage(db, binaryArgs(`m${i}`, { toId: i % 2 ? "b" : "c", keep: true }), T0 + i);
    }
    claimDeliveries(db, { endpointId: "b", connCode: "conn-1", limit: 10 }, T0 + 10);
    for (const id of ["m1", "m3", "m5"]) {
      ackDelivery(db, { endpointId: "b", from: "a", id }, T0 + 20);
    }
    // The newest message and the newest receipt are deleted (retention), so version 1 would
    // hand their ids out again.
    const deletedSeq = maxId(db, "SELECT max(seq) AS n FROM messages");
    const deletedReceipt = maxId(db, "SELECT max(receipt_id) AS n FROM receipts");
    db.prepare("DELETE FROM message_bodies WHERE seq = ?").run(deletedSeq);
    db.prepare("DELETE FROM deliveries WHERE seq = ?").run(deletedSeq);
    db.prepare("DELETE FROM messages WHERE seq = ?").run(deletedSeq);
    db.prepare("DELETE FROM receipts WHERE receipt_id = ?").run(deletedReceipt);
    return { deletedSeq, deletedReceipt };
  } finally {
    db.close();
  }
}

Deno.test("a populated version-1 database is backed up, upgraded with its rows intact and never reuses an id", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-m2-" });
  try {
    const path = join(dir, "nixmsg.db");
    const backupDir = join(dir, "backup");
    const { deletedSeq, deletedReceipt } = await populatedV1(path, backupDir);
    const before = (() => {
      const db = openDb(path, { readOnly: true });
      try {
        return dumpAll(db);
      } finally {
        db.close();
      }
    })();
    assert.equal(before.messages.length, 5);
    assert.equal(before.receipts.length, 2);
    assert.equal(before.deliveries.length, 5);

    const result = await migrate(path, { backupDir, now: T0 + 1000 });
    assert.equal(result.from, 1);
    assert.equal(result.to, SCHEMA_VERSION);
    assert.ok(result.backupPath !== null, "an upgrade takes a backup first");

    // The backup copy is the version-1 database as it was, complete.
    const backup = openDb(result.backupPath!, { readOnly: true });
    try {
      assert.equal(currentVersion(backup), 1);
      assert.deepEqual(dumpAll(backup), before);
    } finally {
      backup.close();
    }

    const db = openDb(path);
    try {
      resetOpsContext();
      assert.equal(currentVersion(db), SCHEMA_VERSION);
      const after = dumpAll(db);
      assert.deepEqual(v1Columns(after, before), before, "every row keeps its values and ids");
      for (const table of ["deliveries", "receipts"]) {
        const due = (after[table] as { hook_due: unknown }[]).filter((r) => r.hook_due !== null);
        assert.deepEqual(due, [], `no ${table} row gets a webhook due time from the upgrade`);
      }
      assert.deepEqual(db.prepare("PRAGMA foreign_key_check").all(), []);
      const sql = (name: string) =>
        (db.prepare("SELECT sql FROM sqlite_master WHERE name = ?").get(name) as { sql: string })
          .sql;
      assert.match(sql("messages"), /seq INTEGER PRIMARY KEY AUTOINCREMENT/);
      assert.match(sql("receipts"), /receipt_id INTEGER PRIMARY KEY AUTOINCREMENT/);

      // New rows get ids above every id handed out before, deleted ones included.
      const m7 = submitMessage(db, binaryArgs("m7", { toId: "b", keep: true }), T0 + 2000);
      const seq7 = maxId(db, "SELECT max(seq) AS n FROM messages");
      assert.ok(seq7 > deletedSeq, `seq ${seq7} > ${deletedSeq}`);
      assert.equal(m7.state, "dispatched");
      claimDeliveries(db, { endpointId: "b", connCode: "conn-2", limit: 10 }, T0 + 2001);
      ackDelivery(db, { endpointId: "b", from: "a", id: "m7" }, T0 + 2002);
      const r7 = maxId(db, "SELECT max(receipt_id) AS n FROM receipts");
      assert.ok(r7 > deletedReceipt, `receipt ${r7} > ${deletedReceipt}`);

      // Deleting the newest rows again does not make their ids come back.
      db.prepare("DELETE FROM messages WHERE seq = ?").run(seq7);
      db.prepare("DELETE FROM receipts WHERE receipt_id = ?").run(r7);
      assert.equal(
        (db.prepare("SELECT count(*) AS n FROM deliveries WHERE seq = ?").get(seq7) as {
          n: number;
        }).n,
        0,
        "deleting a message still cascades to its deliveries",
      );
      submitMessage(db, binaryArgs("m8", { toId: "b", keep: true }), T0 + 3000);
      claimDeliveries(db, { endpointId: "b", connCode: "conn-2", limit: 10 }, T0 + 3001);
      ackDelivery(db, { endpointId: "b", from: "a", id: "m8" }, T0 + 3002);
      assert.ok(maxId(db, "SELECT max(seq) AS n FROM messages") > seq7);
      assert.ok(maxId(db, "SELECT max(receipt_id) AS n FROM receipts") > r7);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a new database starts message seq and receipt ids at 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-m2-" });
  try {
    const path = join(dir, "nixmsg.db");
    await migrate(path, { backupDir: join(dir, "backup") });
    const db = openDb(path);
    try {
      resetOpsContext();
      for (const id of ["a", "b"]) addEndpoint(db, id);
      submitMessage(db, binaryArgs("m1", { keep: true }), T0);
      claimDeliveries(db, { endpointId: "b", connCode: "c1", limit: 10 }, T0);
      ackDelivery(db, { endpointId: "b", from: "a", id: "m1" }, T0);
      assert.equal(maxId(db, "SELECT max(seq) AS n FROM messages"), 1);
      assert.equal(maxId(db, "SELECT max(receipt_id) AS n FROM receipts"), 1);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
