import assert from "node:assert/strict";
import { binaryArgs, T0 } from "../ops/_testing.ts";
import { newPgOpsContext, runOpOn } from "./op.ts";
import { pgOps } from "./ops/mod.ts";
import { pgIgnored, pgTestDb } from "./_testing.ts";
import { PgWriter } from "./writer.ts";
import { connectPostgres, execScript, type PgConnection, query } from "./sql.ts";

// Two writers on one database (what several servers will be): ids in commit order, idempotency
// and claims stay right. One writer is a raw connection held inside an open transaction.

/** Waits until some backend waits on a lock that backend `holder` holds. */
async function lockWaiter(url: string, holder: number): Promise<void> {
  const sql = connectPostgres({ url, max: 1 });
  try {
    for (let i = 0; i < 500; i++) {
      const rows = await query(
        sql,
        "SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))",
        [holder],
      );
      if (rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("No writer ever waited on the held transaction's lock");
  } finally {
    await sql.end();
  }
}

async function backendPid(conn: PgConnection): Promise<number> {
  return (await query<{ pid: number }>(conn, "SELECT pg_backend_pid() AS pid"))[0].pid;
}

async function seed(url: string, schema: string) {
  const sql = connectPostgres({ url, schema, max: 1 });
  for (const id of ["a", "b"]) {
    await query(
      sql,
      `INSERT INTO endpoints (id, login_hash, created_at, offline_since) VALUES ($1, 'x', 0, $2)`,
      [id, T0],
    );
  }
  await sql.end();
}

Deno.test({
  name: "a seq handed out inside an open transaction is never overtaken by a later commit",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    await seed(db.url, db.schema);
    const held = await db.sql.reserve();
    const writer = new PgWriter(db.sql, pgOps, db.ctx, { clock: () => T0 });
    try {
      await execScript(held, "BEGIN");
      const holder = await backendPid(held);
      const first = await runOpOn(
        held,
        newPgOpsContext(),
        pgOps["message.submit"],
        binaryArgs("first"),
        T0,
      );
      let secondSettled = false;
      const second = writer.run("message.submit", binaryArgs("second")).then((r) => {
        secondSettled = true;
        return r;
      });
      // The second submit waits on the counter row until the first transaction ends.
      await lockWaiter(db.url, holder);
      assert.equal(secondSettled, false, "the second submit committed before the first");
      await execScript(held, "COMMIT");
      const r = await second;
      assert.ok(r.seq! > first.seq!, `seq ${r.seq} after ${first.seq}`);
    } finally {
      held.release();
      await writer.close();
      await db.drop();
    }
  },
});

Deno.test({
  name: "two servers submitting one (sender, id) at once store it once and answer alike",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    await seed(db.url, db.schema);
    const other = connectPostgres({ url: db.url, schema: db.schema, max: 2 });
    const w1 = new PgWriter(db.sql, pgOps, db.ctx, { clock: () => T0 });
    const w2 = new PgWriter(other, pgOps, newPgOpsContext(), { clock: () => T0 });
    try {
      const held = await other.reserve();
      await execScript(held, "BEGIN");
      const holder = await backendPid(held);
      const winner = await runOpOn(
        held,
        newPgOpsContext(),
        pgOps["message.submit"],
        binaryArgs("same", { sendAt: T0 + 60_000 }),
        T0,
      );
      const loser = w1.run("message.submit", binaryArgs("same", { sendAt: T0 + 60_000 }));
      await lockWaiter(db.url, holder);
      await execScript(held, "COMMIT");
      held.release();
      const r = await loser;
      assert.deepEqual(
        { seq: r.seq, duplicate: r.duplicate, state: r.state },
        { seq: winner.seq, duplicate: true, state: "scheduled" },
      );
      const n = await query<{ n: number }>(db.sql, "SELECT count(*) AS n FROM messages");
      assert.equal(n[0].n, 1);
      // A different request under the same id still conflicts.
      await assert.rejects(
        () => w2.run("message.submit", binaryArgs("same", { fingerprint: new Uint8Array([7]) })),
        (e) => (e as { code?: string }).code === "conflict",
      );
    } finally {
      await w1.close();
      await w2.close();
      await other.end();
      await db.drop();
    }
  },
});

Deno.test({
  name: "claims of one endpoint from two servers at once never take the same delivery",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    await seed(db.url, db.schema);
    const writer = new PgWriter(db.sql, pgOps, db.ctx, { clock: () => T0 });
    try {
      await writer.run("context.connected", { endpointId: "b" });
      for (let i = 0; i < 6; i++) await writer.run("message.submit", binaryArgs(`c${i}`));
      const h1 = await db.sql.reserve();
      const h2 = await db.sql.reserve();
      await execScript(h1, "BEGIN");
      await execScript(h2, "BEGIN");
      const claim = (h: typeof h1, conn: string) =>
        runOpOn(
          h,
          db.ctx,
          pgOps["delivery.claim"],
          { endpointId: "b", connCode: conn, limit: 4 },
          T0,
        );
      const one = await claim(h1, "n1");
      // SKIP LOCKED: the second server does not wait for the first; it takes the rest.
      const two = await claim(h2, "n2");
      await execScript(h1, "COMMIT");
      await execScript(h2, "COMMIT");
      h1.release();
      h2.release();
      const a = one.claimed.map((c) => c.msgId);
      const b = two.claimed.map((c) => c.msgId);
      assert.deepEqual(a, ["c0", "c1", "c2", "c3"]);
      assert.deepEqual(b, ["c4", "c5"]);
      const marks = await query<{ pushed_conn: string; n: number }>(
        db.sql,
        "SELECT pushed_conn, count(*) AS n FROM deliveries GROUP BY pushed_conn ORDER BY pushed_conn",
      );
      assert.deepEqual(marks.map((m) => `${m.pushed_conn}:${m.n}`), ["n1:4", "n2:2"]);
    } finally {
      await writer.close();
      await db.drop();
    }
  },
});

Deno.test({
  name: "an op stuck behind another session's lock answers busy after lock_timeout",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    await seed(db.url, db.schema);
    const sql = connectPostgres({ url: db.url, schema: db.schema, max: 2, lockTimeoutMs: 200 });
    const writer = new PgWriter(sql, pgOps, newPgOpsContext(), { clock: () => T0 });
    const held = await db.sql.reserve();
    try {
      await execScript(held, "BEGIN");
      await query(held, "SELECT n FROM id_counters WHERE name = 'messages' FOR UPDATE");
      await assert.rejects(
        () => writer.run("message.submit", binaryArgs("stuck")),
        (e) => (e as { code?: string }).code === "busy",
      );
      // Other ops of the store go on, and the op succeeds once the lock is gone.
      await writer.run("settings.set", { key: "k", value: "v" });
      await execScript(held, "COMMIT");
      const r = await writer.run("message.submit", binaryArgs("stuck"));
      assert.equal(r.duplicate, false);
    } finally {
      held.release();
      await writer.close();
      await sql.end();
      await db.drop();
    }
  },
});
