import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { migrate, MIGRATIONS } from "./migrations.ts";
import { openDb } from "./db.ts";
import { addEndpoint, binaryArgs, T0, testDb } from "./ops/_testing.ts";
import { configure } from "./ops/context.ts";
import { dispatchDue, quotaCount, recallMessage, submitMessage } from "./ops/messages.ts";
import { ackDelivery, claimDeliveries, expireDeliveries } from "./ops/deliveries.ts";
import { deleteEndpoint, disableEndpoint } from "./ops/invalidate.ts";
import { createGroup } from "./ops/groups.ts";

type Counts = Record<string, number>;

/** What the quotas count, straight from the rows: unfinished messages, pending deliveries. */
function counted(db: DatabaseSync): Counts {
  const out: Counts = {};
  const rows = db.prepare(
    `SELECT 'sender:' || sender_id AS k, count(*) AS n FROM messages
       WHERE state IN ('scheduled', 'dispatched') GROUP BY sender_id
     UNION ALL
     SELECT 'receiver:' || endpoint_id, count(*) FROM deliveries
       WHERE state = 'pending' GROUP BY endpoint_id`,
  ).all() as { k: string; n: number }[];
  for (const r of rows) out[r.k] = r.n;
  return out;
}

/** What the triggers kept, leaving out rows that went back to 0. */
function kept(db: DatabaseSync): Counts {
  const out: Counts = {};
  const rows = db.prepare("SELECT kind || ':' || id AS k, n FROM quota_counts WHERE n <> 0")
    .all() as { k: string; n: number }[];
  for (const r of rows) out[r.k] = r.n;
  return out;
}

function same(db: DatabaseSync, step: string): void {
  assert.deepEqual(kept(db), counted(db), `after ${step}`);
}

Deno.test("the quota counters equal a count of the rows through every op that moves a message", () => {
  const db = testDb();
  try {
    configure(db, { maxPendingPerSender: 1000, maxPendingPerReceiver: 1000 }, T0);
    for (const id of ["a", "b", "c", "d"]) addEndpoint(db, id);
    createGroup(db, {
      ownerId: "a",
      groupId: "g",
      name: "g",
      members: ["b", "c", "d"].map((id) => ({ id, verdict: "ok" as const })),
      maxMembers: 100,
      admin: true,
    }, T0);
    same(db, "setup");
    for (let i = 0; i < 6; i++) submitMessage(db, binaryArgs(`d${i}`, { keep: true }), T0);
    submitMessage(db, binaryArgs("late", { sendAt: T0 + 60_000, keep: true }), T0);
    submitMessage(db, binaryArgs("grp", { toKind: "group", toId: "g", keep: true }), T0);
    submitMessage(db, binaryArgs("c1", { senderId: "c", toId: "b", keep: true }), T0);
    same(db, "submits (direct, scheduled, group)");
    assert.equal(quotaCount(db, "sender", "a"), 8);
    assert.equal(quotaCount(db, "receiver", "b"), 8);

    claimDeliveries(db, { endpointId: "b", connCode: "k", limit: 4 }, T0);
    same(db, "claim");
    for (const id of ["d0", "d1", "grp"]) ackDelivery(db, { endpointId: "b", from: "a", id }, T0);
    same(db, "acks");
    recallMessage(db, { senderId: "a", id: "d2" }, T0);
    recallMessage(db, { senderId: "a", id: "late" }, T0);
    same(db, "recalls (pending and scheduled)");
    submitMessage(db, binaryArgs("late2", { sendAt: T0 + 1000, keep: false, ttlSeconds: 1 }), T0);
    dispatchDue(db, { limit: 10 }, T0 + 1000);
    same(db, "dispatch of a scheduled message");
    expireDeliveries(db, { limit: 100 }, T0 + 10 * 60_000);
    same(db, "expiry");
    disableEndpoint(db, { endpointId: "c" }, T0);
    same(db, "disabling a sender and member");
    deleteEndpoint(db, { endpointId: "d" }, T0);
    same(db, "deleting a group member");
    deleteEndpoint(db, { endpointId: "a" }, T0);
    same(db, "deleting the sender");
  } finally {
    db.close();
  }
});

Deno.test("the quota counters follow raw SQL too: state flips, cascaded deletes, moved rows", () => {
  const db = testDb();
  try {
    for (const id of ["a", "b", "c"]) addEndpoint(db, id);
    for (let i = 0; i < 4; i++) submitMessage(db, binaryArgs(`m${i}`, { keep: true }), T0);
    same(db, "submits");
    db.exec(
      "UPDATE deliveries SET state = 'accepted' WHERE seq = (SELECT min(seq) FROM deliveries)",
    );
    db.exec("UPDATE deliveries SET state = 'pending' WHERE state = 'accepted'");
    same(db, "a delivery ends and comes back");
    db.exec(
      "UPDATE deliveries SET endpoint_id = 'c' WHERE seq = (SELECT max(seq) FROM deliveries)",
    );
    db.exec("UPDATE messages SET sender_id = 'c' WHERE seq = (SELECT max(seq) FROM messages)");
    same(db, "rows moved to another endpoint");
    db.exec("UPDATE messages SET state = 'completed' WHERE seq = (SELECT min(seq) FROM messages)");
    db.exec("UPDATE messages SET state = 'dispatched' WHERE state = 'scheduled'");
    same(db, "message state flips");
    // deliveries and message_bodies reference messages ON DELETE CASCADE.
    db.exec("DELETE FROM messages WHERE seq IN (SELECT seq FROM messages LIMIT 2)");
    same(db, "messages deleted with their deliveries by the foreign key");
    db.exec("DELETE FROM deliveries");
    db.exec("DELETE FROM messages");
    same(db, "everything deleted");
    assert.deepEqual(kept(db), {});
  } finally {
    db.close();
  }
});

Deno.test("migration 4 counts what a version-3 database already holds", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-v4-" });
  try {
    const path = join(dir, "nixmsg.db");
    await migrate(path, {
      backupDir: join(dir, "backup"),
      migrations: MIGRATIONS.slice(0, 3),
      now: T0,
    });
    const db = openDb(path);
    try {
      // Version 3 has no counters: fill it as a build without quotas would.
      configure(db, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, T0);
      for (const id of ["a", "b", "c"]) addEndpoint(db, id);
      for (let i = 0; i < 5; i++) submitMessage(db, binaryArgs(`m${i}`, { keep: true }), T0);
      submitMessage(db, binaryArgs("s", { sendAt: T0 + 60_000 }), T0);
      submitMessage(db, binaryArgs("c", { senderId: "c", keep: true }), T0);
      claimDeliveries(db, { endpointId: "b", connCode: "k", limit: 10 }, T0);
      ackDelivery(db, { endpointId: "b", from: "a", id: "m0" }, T0);
    } finally {
      db.close();
    }
    const result = await migrate(path, {
      backupDir: join(dir, "backup"),
      migrations: MIGRATIONS.slice(0, 4),
      now: T0 + 1,
    });
    assert.deepEqual({ from: result.from, to: result.to }, { from: 3, to: 4 });
    const after = openDb(path);
    try {
      assert.deepEqual(kept(after), { "sender:a": 5, "sender:c": 1, "receiver:b": 5 });
      same(after, "migration");
    } finally {
      after.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
