import assert from "node:assert/strict";
import { contractTest, T0 } from "./_stores.ts";

// The audit log's ops (spec 14 M4 操作日志, issue 32) on both stores: rows get growing ids and
// the writer's clock; pruning deletes the oldest rows before a time, in batches.

const DAY = 86_400_000;

contractTest("audit rows are recorded in order and pruned oldest first, in batches", async (s) => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) {
    const entry = {
      actor: i % 2 === 0 ? "admin" : "system",
      action: "endpoint.disable",
      target: `e${i}`,
      result: "ok",
      ip: i % 2 === 0 ? "192.0.2.1" : "",
    };
    ids.push((await s.run("audit.record", entry, T0 + i * DAY)).id);
  }
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `ids ${ids}`);
  const rows = await s.rows<{ id: number; at: number; actor: string; target: string; ip: string }>(
    "SELECT id, at, actor, target, ip FROM audit_log ORDER BY id",
  );
  assert.deepEqual(
    rows.map((r) => [Number(r.id), Number(r.at), r.actor, r.target, r.ip]),
    ids.map((id, i) => [
      id,
      T0 + i * DAY,
      i % 2 === 0 ? "admin" : "system",
      `e${i}`,
      i % 2 === 0 ? "192.0.2.1" : "",
    ]),
  );

  // Rows 0..2 are older than T0 + 2.5 days: a batch of 2 takes two, asks for more, then one.
  const before = T0 + 2.5 * DAY;
  assert.deepEqual(await s.run("audit.prune", { before, batch: 2 }), { deleted: 2, more: true });
  assert.deepEqual(await s.run("audit.prune", { before, batch: 2 }), { deleted: 1, more: false });
  assert.deepEqual(await s.run("audit.prune", { before, batch: 2 }), { deleted: 0, more: false });
  const left = await s.rows<{ target: string }>("SELECT target FROM audit_log ORDER BY id");
  assert.deepEqual(left.map((r) => r.target), ["e3", "e4"]);
  assert.equal(
    (await s.run("audit.record", {
      ...left[0],
      actor: "cli",
      action: "backup",
      result: "ok",
      ip: "",
    })).id > ids[4],
    true,
  );
});
