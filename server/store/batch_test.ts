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

Deno.test("BatchRunner reports an unguarded op's OpError alone, without running the batch again", () => {
  const db = memoryDb();
  try {
    let puts = 0;
    const put = (d: DatabaseSync, a: { key: string }, now: number) => {
      puts++;
      return ops.put(d, a, now);
    };
    const fail = (_db: DatabaseSync, a: { key: string }) => {
      throw new OpError("not_found", { key: a.key });
    };
    const runner = new BatchRunner(db, { put, fail }, new Set(["put", "fail"]));
    const msg = runner.run([
      [1, "put", { key: "a" }, 1],
      [2, "fail", { key: "b" }, 1],
      [3, "put", { key: "c" }, 1],
    ]);
    assert.ok(msg.ok);
    assert.deepEqual(msg.results, [
      [1, true, "a"],
      [2, false, { code: "not_found", message: "not_found", data: { key: "b" } }],
      [3, true, "c"],
    ]);
    assert.deepEqual(keys(db), ["a", "c"]);
    assert.equal(puts, 2, "one run");
    // A SQLite error is not a refusal: the batch runs again, guarded, and reports it alone.
    puts = 0;
    const dup = runner.run([[4, "put", { key: "a" }, 2], [5, "put", { key: "d" }, 2]]);
    assert.ok(dup.ok);
    assert.equal(dup.results[0][1], false);
    assert.match(JSON.stringify(dup.results[0][2]), /UNIQUE constraint failed/);
    assert.deepEqual(dup.results[1], [5, true, "d"]);
    assert.deepEqual(keys(db), ["a", "c", "d"]);
    assert.equal(puts, 3, "the failing put, then both puts again");
  } finally {
    db.close();
  }
});

Deno.test("BatchRunner runs a batch again, guarded, when an unguarded op fails after writing", () => {
  const db = memoryDb();
  try {
    const putThenCrash = (d: DatabaseSync, a: { key: string }, now: number) => {
      ops.put(d, a, now);
      throw new Error("bug after writing");
    };
    let bumps = 0;
    const bump = (d: DatabaseSync, _a: unknown, now: number) => {
      bumps++;
      d.prepare(`INSERT INTO settings (key, value, updated_at) VALUES ('n', '1', ?)
        ON CONFLICT (key) DO UPDATE SET value = value + 1`).run(now);
      return (d.prepare("SELECT value FROM settings WHERE key = 'n'").get() as { value: string })
        .value;
    };
    const runner = new BatchRunner(
      db,
      { ...ops, bump, putThenCrash },
      new Set(["put", "putThenCrash", "bump"]),
    );
    const msg = runner.run([
      [1, "put", { key: "a" }, 1],
      [2, "bump", {}, 1],
      [3, "putThenCrash", { key: "b" }, 1],
      [4, "put", { key: "c" }, 1],
      [5, "bump", {}, 1],
    ]);
    assert.ok(msg.ok);
    // The answers come from the second run, in which the failing op had its own savepoint:
    // its write is undone alone and each op's effect is counted once.
    assert.deepEqual(msg.results, [
      [1, true, "a"],
      [2, true, "1"],
      [3, false, { message: "bug after writing" }],
      [4, true, "c"],
      [5, true, "2"],
    ]);
    assert.deepEqual(keys(db), ["a", "c", "n"]);
    assert.equal(bumps, 3, "bump ran once before the failure, then twice in the guarded run");
    assert.equal(db.isTransaction, false);
    // The next batch runs unguarded again.
    const next = runner.run([[6, "put", { key: "d" }, 2]]);
    assert.ok(next.ok);
    assert.deepEqual(keys(db), ["a", "c", "d", "n"]);
  } finally {
    db.close();
  }
});

Deno.test("BatchRunner fails the batch when an unguarded op ends the transaction under it", () => {
  const db = memoryDb();
  try {
    const rollbackAll = (d: DatabaseSync) => {
      d.exec("ROLLBACK");
      throw new Error("Lost the transaction");
    };
    const runner = new BatchRunner(db, { ...ops, rollbackAll }, new Set(["put", "rollbackAll"]));
    const msg = runner.run([[1, "put", { key: "a" }, 1], [2, "rollbackAll", {}, 1]]);
    assert.ok(!msg.ok);
    assert.deepEqual(msg.ids, [1, 2]);
    assert.match(msg.error, /Lost the transaction/);
    assert.deepEqual(keys(db), []);
    assert.equal(runner.run([[3, "put", { key: "b" }, 2]]).ok, true);
    assert.deepEqual(keys(db), ["b"]);
  } finally {
    db.close();
  }
});
