import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { openDb, prepareCached } from "./db.ts";

function pragma(db: DatabaseSync, name: string): unknown {
  return Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0];
}

Deno.test("openDb() applies the pragmas of spec 7.7", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-db-" });
  const db = openDb(join(dir, "a.db"));
  try {
    assert.equal(pragma(db, "journal_mode"), "wal");
    assert.equal(pragma(db, "busy_timeout"), 5000);
    assert.equal(pragma(db, "synchronous"), 2); // FULL
    assert.equal(pragma(db, "foreign_keys"), 1);
    assert.equal(pragma(db, "secure_delete"), 1);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openDb() sets synchronous NORMAL when asked", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-db-" });
  const db = openDb(join(dir, "a.db"), { synchronous: "NORMAL" });
  try {
    assert.equal(pragma(db, "synchronous"), 1);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openDb() read-only refuses writes and never creates the file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-db-" });
  const path = join(dir, "a.db");
  try {
    assert.throws(() => openDb(path, { readOnly: true }), /unable to open/);
    assert.equal(existsSync(path), false);
    const rw = openDb(path);
    rw.exec("CREATE TABLE t (x INTEGER)");
    const ro = openDb(path, { readOnly: true });
    assert.equal(pragma(ro, "journal_mode"), "wal");
    assert.equal(pragma(ro, "foreign_keys"), 1);
    assert.throws(() => ro.exec("INSERT INTO t VALUES (1)"), /readonly/);
    ro.close();
    rw.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openDb() rejects an unknown synchronous mode", () => {
  assert.throws(
    () => openDb(":memory:", { synchronous: "OFF" as "FULL" }),
    /Unknown synchronous mode OFF/,
  );
});

Deno.test("prepareCached() prepares once per connection", () => {
  const a = openDb(":memory:");
  const b = openDb(":memory:");
  try {
    const sql = "SELECT 1 AS one";
    assert.equal(prepareCached(a, sql), prepareCached(a, sql));
    assert.notEqual(prepareCached(a, sql), prepareCached(b, sql));
    assert.deepEqual({ ...(prepareCached(b, sql).get() as object) }, { one: 1 });
  } finally {
    a.close();
    b.close();
  }
});
