import assert from "node:assert/strict";
import { OpError } from "../op_error.ts";
import type { PgTx } from "./op.ts";
import postgres from "postgres";
import { newPgOpsContext } from "./op.ts";
import { PG_TEST_URL, pgIgnored, pgTestDb } from "./_testing.ts";
import { PgWriter } from "./writer.ts";
import { connectPostgres, execScript, query } from "./sql.ts";

// The batch runner on a real PostgreSQL: one transaction per turn, a savepoint per op, nothing
// answered before COMMIT, busy for the whole batch when the COMMIT fails.

const SETUP = `CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
  CREATE TABLE parents (id INTEGER PRIMARY KEY);
  CREATE TABLE children (id INTEGER REFERENCES parents(id) DEFERRABLE INITIALLY DEFERRED)`;

/** How many times `counted` ran: a batch that runs again runs it twice. */
let runs = 0;

const testOps = {
  counted: (_t: PgTx, _a: Record<string, never>) => Promise.resolve(++runs),
  readThenRefuse: async (t: PgTx, _a: Record<string, never>) => {
    await t.q("SELECT count(*) FROM items");
    throw new OpError("not_found");
  },
  put: async (t: PgTx, a: { k: string; v: number }) => {
    await t.q("INSERT INTO items (k, v) VALUES ($1, $2)", [a.k, a.v]);
    return (await t.q<{ x: string }>("SELECT txid_current()::text AS x"))[0].x;
  },
  putThenRefuse: async (t: PgTx, a: { k: string }) => {
    await t.q("INSERT INTO items (k, v) VALUES ($1, 0)", [a.k]);
    throw new OpError("conflict", { why: "test" });
  },
  badSql: async (t: PgTx, _a: Record<string, never>) => {
    await t.q("SELECT 1 / 0");
  },
  syncCommit: async (t: PgTx, _a: Record<string, never>) =>
    (await t.q<{ s: string }>("SELECT current_setting('synchronous_commit') AS s"))[0].s,
  orphan: async (t: PgTx, _a: Record<string, never>) => {
    await t.q("INSERT INTO children (id) VALUES (42)");
  },
  /** A write sent without waiting, then a read that must see it. */
  sendThenRead: async (t: PgTx, a: { k: string }) => {
    t.send("INSERT INTO items (k, v) VALUES ($1, 0)", [a.k]);
    return (await t.q<{ n: number }>("SELECT count(*)::int AS n FROM items WHERE k = $1", [a.k]))[0]
      .n;
  },
  /** A write sent without waiting, and nothing after it: only the runner sees its failure. */
  sendOnly: (t: PgTx, a: { k: string }) => {
    t.send("INSERT INTO items (k, v) VALUES ($1, 0)", [a.k]);
    return Promise.resolve("sent");
  },
  /** Adds a connection to the context: run twice without the context put back, it adds two. */
  connectOnce: (t: PgTx, _a: Record<string, never>) => {
    const codes = t.ctx.connections.get("e") ?? new Set<string>();
    codes.add(`c${codes.size}`);
    t.ctx.connections.set("e", codes);
    t.ctx.connected.add("e");
    return Promise.resolve(codes.size);
  },
};

async function setup() {
  const db = await pgTestDb({ migrate: false });
  await execScript(db.sql, SETUP);
  const writer = new PgWriter(db.sql, testOps, db.ctx);
  const ctx = db.ctx;
  const reader = connectPostgres({ url: db.url, schema: db.schema, max: 1 });
  const keys = async () =>
    (await query<{ k: string }>(reader, "SELECT k FROM items ORDER BY k")).map((r) => r.k);
  return {
    writer,
    ctx,
    keys,
    async done() {
      await writer.close();
      await reader.end();
      await db.drop();
    },
  };
}

Deno.test({
  name: "PgWriter runs the ops queued in one turn in one transaction",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      const txids = await Promise.all(
        ["a", "b", "c", "d"].map((k, v) => s.writer.run("put", { k, v })),
      );
      assert.equal(new Set(txids).size, 1, `one transaction, got ${txids.join(",")}`);
      assert.equal(s.writer.commits, 1);
      assert.deepEqual(await s.keys(), ["a", "b", "c", "d"]);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter rolls a refused op back to its savepoint and commits its batch mates",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      const [a, refused, bad, b] = await Promise.allSettled([
        s.writer.run("put", { k: "a", v: 1 }),
        s.writer.run("putThenRefuse", { k: "refused" }),
        s.writer.run("badSql", {}),
        s.writer.run("put", { k: "b", v: 2 }),
      ]);
      assert.equal(a.status, "fulfilled");
      assert.equal(b.status, "fulfilled");
      assert.ok(refused.status === "rejected" && refused.reason instanceof OpError);
      assert.equal(refused.reason.code, "conflict");
      assert.deepEqual(refused.reason.data, { why: "test" });
      // A statement error is not a refusal: the caller sees busy (STYLE: unknown errors).
      assert.ok(bad.status === "rejected" && bad.reason instanceof OpError);
      assert.equal(bad.reason.code, "busy");
      assert.deepEqual(await s.keys(), ["a", "b"]);
      assert.equal(s.writer.healthy, true);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter sends an op's unawaited writes ahead of its later statements",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      const [a, b] = await Promise.all([
        s.writer.run("sendThenRead", { k: "a" }),
        s.writer.run("sendOnly", { k: "b" }),
      ]);
      assert.deepEqual([a, b], [1, "sent"]);
      assert.equal(s.writer.commits, 1);
      assert.deepEqual(await s.keys(), ["a", "b"]);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter answers a refusal before any change in the batch, and runs it again after one",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      runs = 0;
      const clean = await Promise.allSettled([
        s.writer.run("counted", {}),
        s.writer.run("put", { k: "a", v: 1 }),
        s.writer.run("readThenRefuse", {}),
      ]);
      assert.deepEqual(clean.map((r) => r.status), ["fulfilled", "fulfilled", "rejected"]);
      assert.equal((clean[2] as PromiseRejectedResult).reason.code, "not_found");
      assert.equal(runs, 1, "nothing to roll back: the batch ran once");
      const dirty = await Promise.allSettled([
        s.writer.run("counted", {}),
        s.writer.run("put", { k: "b", v: 1 }),
        s.writer.run("putThenRefuse", { k: "refused" }),
      ]);
      assert.deepEqual(dirty.map((r) => r.status), ["fulfilled", "fulfilled", "rejected"]);
      assert.equal((dirty[2] as PromiseRejectedResult).reason.code, "conflict");
      assert.equal(runs, 3, "a refusal after a write: the batch ran again, one op at a time");
      assert.deepEqual(await s.keys(), ["a", "b"]);
      assert.equal(s.writer.commits, 2);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter runs a batch again one op at a time when an unawaited write fails",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      await s.writer.run("put", { k: "taken", v: 0 });
      const [connected, a, dup, b] = await Promise.allSettled([
        s.writer.run("connectOnce", {}),
        s.writer.run("put", { k: "a", v: 1 }),
        s.writer.run("sendOnly", { k: "taken" }), // fails only when its INSERT is answered
        s.writer.run("sendThenRead", { k: "b" }),
      ]);
      // The failing op alone is rolled back; its batch mates commit once, in one transaction.
      assert.ok(dup.status === "rejected" && dup.reason instanceof OpError);
      assert.equal(dup.reason.code, "busy");
      assert.deepEqual([connected.status, a.status, b.status], [
        "fulfilled",
        "fulfilled",
        "fulfilled",
      ]);
      assert.equal(s.writer.commits, 2);
      assert.deepEqual(await s.keys(), ["a", "b", "taken"]);
      // The context was put back before the second run: one connection, not two.
      assert.ok(connected.status === "fulfilled");
      assert.equal(connected.value, 1);
      assert.deepEqual([...s.ctx.connections.get("e")!], ["c0"]);
      assert.equal(s.writer.healthy, true);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter answers an op only once its COMMIT is visible to another connection",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      const seen: string[][] = [];
      await Promise.all(
        ["x", "y"].map((k) =>
          s.writer.run("put", { k, v: 0 }).then(async () => {
            seen.push(await s.keys());
          })
        ),
      );
      assert.deepEqual(seen, [["x", "y"], ["x", "y"]]);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter rejects every op of a batch whose COMMIT fails with busy, then recovers",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      const results = await Promise.allSettled([
        s.writer.run("put", { k: "lost", v: 1 }),
        s.writer.run("orphan", {}), // a deferred foreign key: the COMMIT fails
      ]);
      for (const r of results) {
        assert.ok(r.status === "rejected" && r.reason instanceof OpError);
        assert.equal(r.reason.code, "busy");
      }
      assert.equal(s.writer.healthy, false);
      assert.deepEqual(await s.keys(), []);
      await s.writer.run("put", { k: "after", v: 2 });
      assert.equal(s.writer.healthy, true);
      assert.deepEqual(await s.keys(), ["after"]);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "PgWriter commits with synchronous_commit on even where the database default is off",
  ignore: pgIgnored(),
  fn: async () => {
    const url = PG_TEST_URL!;
    const name = `nixmsg_sync_${Deno.pid}`;
    const admin = connectPostgres({ url, max: 1 });
    await execScript(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await execScript(admin, `CREATE DATABASE ${name}`);
    await execScript(admin, `ALTER DATABASE ${name} SET synchronous_commit = off`);
    const u = new URL(url);
    u.pathname = `/${name}`;
    const sql = connectPostgres({ url: u.toString(), max: 1 });
    const writer = new PgWriter(sql, testOps, newPgOpsContext());
    try {
      const plain = postgres(u.toString(), { max: 1, onnotice: () => {} });
      const [{ s: fallback }] = await plain`SELECT current_setting('synchronous_commit') AS s`;
      await plain.end();
      assert.equal(fallback, "off", "the database default applies to other clients");
      assert.equal(await writer.run("syncCommit", {}), "on");
    } finally {
      await writer.close();
      await sql.end();
      await execScript(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  },
});

Deno.test({
  name: "PgWriter answers unknown ops and ops after close with errors, not results",
  ignore: pgIgnored(),
  fn: async () => {
    const s = await setup();
    try {
      await assert.rejects(
        () => s.writer.run("nope", {}),
        (e) => e instanceof OpError && e.code === "busy",
      );
      await s.writer.close();
      await assert.rejects(
        () => s.writer.run("put", { k: "late", v: 0 }),
        (e) => e instanceof OpError && e.code === "busy",
      );
      assert.deepEqual(await s.keys(), []);
    } finally {
      await s.done();
    }
  },
});

Deno.test({
  name: "a cluster node's batch waits for the cluster batch lock; a single node's does not",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb({ migrate: false });
    await execScript(db.sql, SETUP);
    const cluster = new PgWriter(db.sql, testOps, newPgOpsContext({ cluster: true }));
    const single = new PgWriter(db.sql, testOps, newPgOpsContext());
    // Another node's batch, held open: it holds the same transaction-level lock.
    const other = connectPostgres({ url: db.url, schema: db.schema, max: 1 });
    try {
      const held = await other.reserve();
      await execScript(held, "BEGIN");
      await query(held, "SELECT pg_advisory_xact_lock(7269826384)");
      let clusterDone = false;
      const waiting = cluster.run("put", { k: "c", v: 1 }).then(() => (clusterDone = true));
      await single.run("put", { k: "s", v: 1 });
      assert.equal(clusterDone, false, "the cluster batch waits for the lock");
      await execScript(held, "COMMIT");
      held.release();
      await waiting;
      assert.equal(clusterDone, true);
    } finally {
      await cluster.close();
      await single.close();
      await other.end();
      await db.drop();
    }
  },
});
