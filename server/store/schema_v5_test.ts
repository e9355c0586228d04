import assert from "node:assert/strict";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { migrate, MIGRATIONS } from "./migrations.ts";
import { openDb } from "./db.ts";
import { addEndpoint, binaryArgs, messageLine, T0 } from "./ops/_testing.ts";
import { configure } from "./ops/context.ts";
import { submitMessage } from "./ops/messages.ts";
import { ackDelivery, claimDeliveries } from "./ops/deliveries.ts";
import { ackReceipt } from "./ops/receipts.ts";
import { disableEndpoint } from "./ops/invalidate.ts";

const LATER = T0 + 60_000;

function seqOf(db: DatabaseSync, sender: string, id: string): number {
  const row = db.prepare("SELECT seq FROM messages WHERE sender_id = ? AND id = ?").get(
    sender,
    id,
  ) as { seq: number };
  return row.seq;
}

/** The message ids an index holds, read through that index alone. */
function held(db: DatabaseSync, index: string, where: string): string[] {
  const rows = db.prepare(
    `SELECT id FROM messages INDEXED BY ${index} WHERE ${where} AND state = 'scheduled'
     ORDER BY id`,
  ).all() as { id: string }[];
  return rows.map((r) => r.id);
}

/** The message ids of the pending deliveries an index holds, read through that index alone. */
function pending(db: DatabaseSync, index: string, where: string): string[] {
  const rows = db.prepare(
    `SELECT m.id FROM deliveries d INDEXED BY ${index} JOIN messages m ON m.seq = d.seq
     WHERE ${where} AND d.state = 'pending' ORDER BY m.id`,
  ).all() as { id: string }[];
  return rows.map((r) => r.id);
}

/** The ids of the unacknowledged receipts of `sender`, read through the outbox index alone. */
function unacked(db: DatabaseSync, sender: string): number[] {
  const rows = db.prepare(
    `SELECT receipt_id FROM receipts INDEXED BY idx_receipts_outbox
     WHERE sender_id = ? AND acked = 0 ORDER BY receipt_id`,
  ).all(sender) as { receipt_id: number }[];
  return rows.map((r) => r.receipt_id);
}

function indexSql(db: DatabaseSync, name: string): string {
  const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?")
    .get(name) as { sql: string };
  return row.sql;
}

Deno.test("migration 5 keeps only the rows their queries read in five indexes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-v5-" });
  try {
    const path = join(dir, "nixmsg.db");
    await migrate(path, {
      backupDir: join(dir, "backup"),
      migrations: MIGRATIONS.slice(0, 4),
      now: T0,
    });
    let db = openDb(path);
    try {
      configure(db, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, T0);
      for (const id of ["a", "b", "c"]) addEndpoint(db, id);
      submitMessage(db, binaryArgs("now", { keep: true }), T0); // a → b, dispatched
      submitMessage(db, binaryArgs("done", { keep: true }), T0); // a → b, completed below
      claimDeliveries(db, { endpointId: "b", connCode: "k", limit: 10 }, T0);
      ackDelivery(db, { endpointId: "b", from: "a", id: "done" }, T0);
      submitMessage(db, binaryArgs("later", { sendAt: LATER }), T0); // a → b, scheduled
      submitMessage(db, binaryArgs("toC", { toId: "c", sendAt: LATER }), T0); // a → c
      submitMessage(db, binaryArgs("fromC", { senderId: "c", sendAt: LATER }), T0); // c → b
      // Version 4's indexes hold every message, whatever its state.
      assert.doesNotMatch(indexSql(db, "idx_messages_dest"), /WHERE/);
    } finally {
      db.close();
    }

    const result = await migrate(path, {
      backupDir: join(dir, "backup"),
      migrations: MIGRATIONS.slice(0, 5),
      now: T0 + 1,
    });
    assert.deepEqual({ from: result.from, to: result.to }, { from: 4, to: 5 });
    db = openDb(path);
    try {
      for (const name of ["idx_messages_dest", "idx_messages_sender_state"]) {
        assert.match(indexSql(db, name), /WHERE state = 'scheduled'$/, name);
      }
      for (const name of ["idx_deliveries_outbox", "idx_deliveries_expire"]) {
        assert.match(indexSql(db, name), /WHERE state = 'pending'$/, name);
      }
      assert.match(indexSql(db, "idx_receipts_outbox"), /WHERE acked = 0$/);
      // "done" was accepted before the migration: only "now" is still pending, and a's one
      // receipt ("done" accepted) is not acknowledged yet.
      const [receipt] = unacked(db, "a");
      assert.equal(unacked(db, "a").length, 1);
      assert.deepEqual(ackReceipt(db, { senderId: "a", receiptId: receipt }, T0 + 1), { ok: true });
      assert.deepEqual(unacked(db, "a"), []);
      assert.deepEqual(ackReceipt(db, { senderId: "a", receiptId: receipt }, T0 + 1), { ok: true });
      assert.deepEqual(pending(db, "idx_deliveries_outbox", "d.endpoint_id = 'b'"), ["now"]);
      assert.deepEqual(pending(db, "idx_deliveries_expire", "d.expire_at > 0"), ["now"]);
      ackDelivery(db, { endpointId: "b", from: "a", id: "now" }, T0 + 1);
      assert.deepEqual(pending(db, "idx_deliveries_outbox", "d.endpoint_id = 'b'"), []);
      assert.deepEqual(pending(db, "idx_deliveries_expire", "d.expire_at > 0"), []);
      assert.deepEqual(
        held(db, "idx_messages_dest", "dest_kind = 'endpoint' AND dest_id = 'b'"),
        ["fromC", "later"],
      );
      assert.deepEqual(held(db, "idx_messages_sender_state", "sender_id = 'a'"), [
        "later",
        "toC",
      ]);
      const count = db.prepare("SELECT count(*) AS n FROM messages").get() as { n: number };
      assert.equal(count.n, 5);
    } finally {
      db.close();
    }

    // Today's ops need today's schema (the disable writes columns of later migrations).
    await migrate(path, { backupDir: join(dir, "backup"), now: T0 + 2 });
    db = openDb(path);
    try {
      // The invalidations that search these indexes find the migrated rows: disabling c ends
      // what was scheduled to c and what c had scheduled; disabling b, what was scheduled to b.
      disableEndpoint(db, { endpointId: "c" }, T0 + 2);
      assert.equal(messageLine(db, seqOf(db, "a", "toC")), "completed:endpoint_disabled");
      assert.equal(messageLine(db, seqOf(db, "c", "fromC")), "completed:sender_disabled");
      assert.equal(messageLine(db, seqOf(db, "a", "later")), "scheduled:");
      assert.equal(messageLine(db, seqOf(db, "a", "now")), "completed:");
      disableEndpoint(db, { endpointId: "b" }, T0 + 3);
      assert.equal(messageLine(db, seqOf(db, "a", "later")), "completed:endpoint_disabled");
      assert.deepEqual(held(db, "idx_messages_dest", "dest_kind = 'endpoint'"), []);
      assert.deepEqual(held(db, "idx_messages_sender_state", "sender_id IS NOT NULL"), []);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
