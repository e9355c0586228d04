import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { BatchRunner } from "./batch.ts";
import { openDb } from "./db.ts";
import { OpError } from "./op_error.ts";
import { SCHEMA_V1_SQL } from "./schema_v1.ts";
import type { WireOp } from "./writer_protocol.ts";

const SQL_PUT = "INSERT INTO settings (key, value, updated_at) VALUES (?, 'v', ?)";

const ops = {
  put: (db: DatabaseSync, a: { key: string }, now: number) => {
    db.prepare(SQL_PUT).run(a.key, now);
    return a.key;
  },
  putThenFail: (db: DatabaseSync, a: { key: string }, now: number) => {
    db.prepare(SQL_PUT).run(a.key, now);
    throw new OpError("conflict", { key: a.key });
  },
  breakCommit: (db: DatabaseSync) => {
    db.exec("PRAGMA defer_foreign_keys = ON");
    db.exec(`INSERT INTO message_bodies (seq, body) VALUES (99, x'00')`);
  },
};

function memoryDb(): DatabaseSync {
  const db = openDb(":memory:");
  db.exec(SCHEMA_V1_SQL);
  return db;
}

function keys(db: DatabaseSync): string[] {
  return (db.prepare("SELECT key FROM settings ORDER BY key").all() as { key: string }[])
    .map((r) => r.key);
}

Deno.test("BatchRunner commits good ops and rolls back a failing op to its savepoint", () => {
  const db = memoryDb();
  try {
    const runner = new BatchRunner(db, ops);
    const items: WireOp[] = [
      [1, "put", { key: "a" }, 10],
      [2, "putThenFail", { key: "b" }, 11],
      [3, "put", { key: "c" }, 12],
      [4, "nope", {}, 13],
    ];
    const msg = runner.run(items);
    assert.equal(msg.ok, true);
    assert.ok(msg.ok);
    assert.deepEqual(msg.results, [
      [1, true, "a"],
      [2, false, { code: "conflict", message: "conflict", data: { key: "b" } }],
      [3, true, "c"],
      [4, false, { message: "Unknown op nope" }],
    ]);
    assert.deepEqual(keys(db), ["a", "c"]);
    assert.equal(db.isTransaction, false);
  } finally {
    db.close();
  }
});

Deno.test("BatchRunner fails the whole batch when COMMIT fails and stays usable", () => {
  const db = memoryDb();
  try {
    const runner = new BatchRunner(db, ops);
    const msg = runner.run([[1, "put", { key: "a" }, 1], [2, "breakCommit", {}, 1]]);
    assert.equal(msg.ok, false);
    assert.ok(!msg.ok);
    assert.deepEqual(msg.ids, [1, 2]);
    assert.match(msg.error, /FOREIGN KEY constraint failed/);
    assert.deepEqual(keys(db), []);
    assert.equal(db.isTransaction, false);
    // defer_foreign_keys resets at the end of a transaction; the next batch is unaffected.
    assert.equal(runner.run([[3, "put", { key: "z" }, 2]]).ok, true);
    assert.deepEqual(keys(db), ["z"]);
  } finally {
    db.close();
  }
});

Deno.test("BatchRunner fails the batch when an op ends the transaction under it", () => {
  const db = memoryDb();
  try {
    const runner = new BatchRunner(db, {
      ...ops,
      rollbackAll: (d: DatabaseSync) => {
        d.exec("ROLLBACK");
        throw new Error("Lost the transaction");
      },
    });
    const msg = runner.run([[1, "put", { key: "a" }, 1], [2, "rollbackAll", {}, 1]]);
    assert.equal(msg.ok, false);
    assert.deepEqual(keys(db), []);
    assert.equal(runner.run([[3, "put", { key: "b" }, 2]]).ok, true);
  } finally {
    db.close();
  }
});
