import assert from "node:assert/strict";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { openDb } from "./db.ts";
import { migrate } from "./migrations.ts";
import { addEndpoint, addGroup, push, send, T0 } from "./ops/_testing.ts";
import { ackDelivery } from "./ops/deliveries.ts";
import { copyStore, CopyTargetNotEmptyError, sqliteCopyTarget } from "./copy.ts";
import { COPY_TABLES } from "./store.ts";

function counts(db: DatabaseSync): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of COPY_TABLES) {
    out[t] = (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  }
  return out;
}

/** A database with endpoints, a group, pending, acked and scheduled messages and receipts. */
async function fill(path: string, endpoints: number, messages: number): Promise<void> {
  await migrate(path, { backupDir: join(path, "..", "backup") });
  const db = openDb(path);
  try {
    db.exec("BEGIN");
    for (let i = 0; i < endpoints; i++) addEndpoint(db, `e${i}`);
    addGroup(db, "g1", ["e0", "e1", "e2"], T0);
    for (let i = 0; i < messages; i++) {
      const toId = `e${1 + (i % (endpoints - 1))}`;
      send(db, "e0", { toId, sendAt: i % 10 === 0 ? T0 + 3_600_000 : T0 });
    }
    send(db, "e1", { toKind: "group", toId: "g1" });
    push(db, "e1", "c1");
    const pushed = db.prepare(
      `SELECT m.id, m.sender_id FROM deliveries d JOIN messages m ON m.seq = d.seq
       WHERE d.endpoint_id = 'e1' AND d.pushed_at IS NOT NULL`,
    ).all() as { id: string; sender_id: string }[];
    assert.ok(pushed.length > 0);
    for (const row of pushed) {
      ackDelivery(db, { endpointId: "e1", from: row.sender_id, id: row.id }, T0 + 1);
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-copy-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("copyStore() moves every table into an empty store and every count is equal", async () => {
  await withDir(async (dir) => {
    const src = join(dir, "src.db");
    await fill(src, 300, 3000);
    const target = await sqliteCopyTarget(join(dir, "dst.db"), join(dir, "backup"));
    const seen: string[] = [];
    let report;
    try {
      report = await copyStore(src, target, {
        chunk: 500,
        progress: (p) => seen.push(`${p.table} ${p.done}/${p.total}`),
      });
    } finally {
      await target.close();
    }
    assert.equal(report.equal, true, JSON.stringify(report.tables));
    assert.ok(seen.includes("messages 3001/3001"), seen.join("\n"));
    assert.ok(seen.includes("messages 500/3001"), "progress after every chunk");
    const a = openDb(src, { readOnly: true });
    const b = openDb(join(dir, "dst.db"));
    try {
      const before = counts(a);
      assert.ok(
        before.deliveries > 2700 && before.receipts > 0 && before.send_keys > 3000,
        JSON.stringify(before),
      );
      assert.deepEqual(counts(b), before);
      // The quota counters are derived again, to the same values.
      const q = "SELECT kind, id, n FROM quota_counts WHERE n > 0 ORDER BY kind, id";
      assert.deepEqual(b.prepare(q).all(), a.prepare(q).all());
      // A body is copied byte for byte, and new rows get ids above the copied ones.
      const body = "SELECT body FROM message_bodies ORDER BY seq LIMIT 1";
      assert.deepEqual(b.prepare(body).get(), a.prepare(body).get());
      const maxSeq = (a.prepare("SELECT max(seq) AS m FROM messages").get() as { m: number }).m;
      const next = send(b, "e0", { toId: "e1" });
      assert.ok(next.seq! > maxSeq, `${next.seq} > ${maxSeq}`);
    } finally {
      a.close();
      b.close();
    }
  });
});

Deno.test("copyStore() refuses a target that already holds rows", async () => {
  await withDir(async (dir) => {
    const src = join(dir, "src.db");
    await fill(src, 3, 5);
    const dst = join(dir, "dst.db");
    const target = await sqliteCopyTarget(dst, join(dir, "backup"));
    try {
      await target.insertRows("settings", ["key", "value", "updated_at"], [["k", "v", 1]]);
      await assert.rejects(copyStore(src, target), CopyTargetNotEmptyError);
      assert.equal(await target.countRows("endpoints"), 0, "nothing was copied");
    } finally {
      await target.close();
    }
    await assert.rejects(() => sqliteCopyTarget(dst, join(dir, "backup")), /already exists/);
  });
});
