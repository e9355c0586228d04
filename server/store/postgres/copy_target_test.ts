import assert from "node:assert/strict";
import { join } from "node:path";
import { copyStore, CopyTargetNotEmptyError } from "../copy.ts";
import { openDb } from "../db.ts";
import { migrate } from "../migrations.ts";
import { resetOpsContext } from "../ops/context.ts";
import { ackDelivery } from "../ops/deliveries.ts";
import { createToken } from "../ops/admin.ts";
import { recordAuditRow } from "../ops/audit.ts";
import { setSetting } from "../ops/settings.ts";
import { addEndpoint, addGroup, binaryArgs, send, T0 } from "../ops/_testing.ts";
import { submitMessage } from "../ops/messages.ts";
import { COPY_TABLES } from "../store.ts";
import { openPostgresStore } from "./mod.ts";
import { pgIgnored, pgTestDb } from "./_testing.ts";
import { query } from "./sql.ts";

// `nixmsg store copy` into PostgreSQL (issue 29 item 4): a SQLite database written by the real
// ops, copied through copyStore into the PostgreSQL store's copy target.

async function sqliteSource(
  dir: string,
): Promise<{ path: string; maxSeq: number; maxAuditId: number }> {
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  resetOpsContext();
  const db = openDb(path);
  try {
    for (const id of ["a", "b", "c"]) addEndpoint(db, id, { offlineSince: T0 - 1000 });
    addGroup(db, "g", ["a", "b", "c"]);
    setSetting(db, { key: "registration_code", value: "c0de" }, T0);
    createToken(db, { id: "t1", name: "ci", tokenHash: "h1" }, T0);
    let maxAuditId = 0;
    for (const action of ["admin.init", "token.create", "endpoint.create"]) {
      const entry = { actor: "admin", action, target: "", result: "ok", ip: "127.0.0.1" };
      maxAuditId = recordAuditRow(db, entry, T0).id;
    }
    let maxSeq = 0;
    for (let i = 0; i < 30; i++) {
      const r = send(db, "a", { toId: i % 2 === 0 ? "b" : "c", id: `m${i}` });
      maxSeq = Math.max(maxSeq, r.seq!);
    }
    const g = submitMessage(db, binaryArgs("grp", { toKind: "group", toId: "g", keep: true }), T0);
    maxSeq = Math.max(maxSeq, g.seq!);
    for (let i = 0; i < 10; i += 2) {
      ackDelivery(db, { endpointId: "b", from: "a", id: `m${i}` }, T0);
    }
    return { path, maxSeq, maxAuditId };
  } finally {
    db.close();
  }
}

Deno.test({
  name: "store copy moves a SQLite database into PostgreSQL with every count equal",
  ignore: pgIgnored(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-copy-" });
    const pg = await pgTestDb({ migrate: false });
    const store = await openPostgresStore({
      url: pg.url,
      schema: pg.schema,
      maxBatch: 256,
      maxWaitMs: 2,
      clock: () => T0 + 1000,
    });
    try {
      const { path, maxSeq, maxAuditId } = await sqliteSource(dir);
      const target = store.copyTarget!();
      const seen = new Set<string>();
      const report = await copyStore(path, target, {
        chunk: 7,
        progress: (p) => seen.add(p.table),
      });
      assert.equal(report.equal, true, JSON.stringify(report.tables));
      assert.deepEqual([...seen], [...COPY_TABLES]);
      const n = Object.fromEntries(report.tables.map((t) => [t.table, t.target]));
      assert.deepEqual(
        [
          n.endpoints,
          n.group_members,
          n.messages,
          n.deliveries,
          n.send_keys,
          n.api_tokens,
          n.audit_log,
        ],
        [3, 3, 31, 32, 31, 1, 3],
      );
      assert.ok(n.receipts >= 5, `receipts ${n.receipts}`);
      // The quota counters were derived from the copied rows, as SQLite keeps them.
      const source = openDb(path, { readOnly: true });
      const want = source.prepare(
        "SELECT kind, id, n FROM quota_counts WHERE n > 0 ORDER BY kind, id",
      )
        .all().map((r) => `${r.kind}:${r.id}:${r.n}`);
      source.close();
      const got = (await query<{ kind: string; id: string; n: number }>(
        pg.sql,
        "SELECT kind, id, n FROM quota_counts WHERE n > 0 ORDER BY kind, id",
      )).map((r) => `${r.kind}:${r.id}:${r.n}`);
      assert.deepEqual(got, want);
      assert.deepEqual(want, ["receiver:b:11", "receiver:c:16", "sender:a:26"]);
      // Bodies are byte for byte, and new rows continue above the copied ids.
      const frame = await store.query("message.frame_source", { seq: maxSeq });
      assert.deepEqual([...frame!.body], [1]);
      const next = await store.run("message.submit", binaryArgs("after-copy", { toId: "b" }));
      assert.ok(next.seq! > maxSeq, `seq ${next.seq} after ${maxSeq}`);
      const audit = await store.run("audit.record", {
        actor: "cli",
        action: "backup",
        target: "",
        result: "ok",
        ip: "",
      });
      assert.equal(audit.id, maxAuditId + 1);
      await target.close();
      await assert.rejects(
        () => copyStore(path, store.copyTarget!()),
        (e) => e instanceof CopyTargetNotEmptyError,
      );
    } finally {
      await store.close();
      await pg.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
