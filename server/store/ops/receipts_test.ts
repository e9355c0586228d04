import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { addEndpoint, binaryArgs, T0, testDb } from "./_testing.ts";
import { configure } from "./context.ts";
import { submitMessage } from "./messages.ts";
import { ackReceipt, completeEarly, finalize, messageBySeq, writeReceipt } from "./receipts.ts";

// spec 6.4, 7.6: receipts and the end of a message's life.

/** Endpoints a and b, offline since T0. */
function freshDb(): DatabaseSync {
  const db = testDb();
  for (const id of ["a", "b"]) addEndpoint(db, id);
  return db;
}

/** Submits message `id` from a to b due at `sendAt`; returns its seq. */
function send(db: DatabaseSync, id: string, receipt: boolean, sendAt = T0): number {
  return submitMessage(db, binaryArgs(id, { sendAt, receipt }), T0).seq!;
}

function count(db: DatabaseSync, sql: string): number {
  return Number(db.prepare(sql).get()!.n);
}

Deno.test("a receipt is written only when asked for and while the sender exists", () => {
  const cases: { name: string; receipt: boolean; deleteSender: boolean; want: boolean }[] = [
    { name: "asked", receipt: true, deleteSender: false, want: true },
    { name: "not asked", receipt: false, deleteSender: false, want: false },
    { name: "sender gone", receipt: true, deleteSender: true, want: false },
  ];
  for (const c of cases) {
    const db = freshDb();
    const msg = messageBySeq(db, send(db, "m", c.receipt))!;
    if (c.deleteSender) db.exec("DELETE FROM endpoints WHERE id = 'a'");
    const r = writeReceipt(db, msg, "b", "expired", "ttl", T0 + 9);
    assert.equal(r !== null, c.want, c.name);
    assert.equal(count(db, "SELECT count(*) AS n FROM receipts"), c.want ? 1 : 0, c.name);
    if (r !== null) {
      assert.deepEqual(r, {
        receiptId: r.receiptId,
        senderId: "a",
        msgId: "m",
        endpointId: "b",
        state: "expired",
        reason: "ttl",
        atMs: T0 + 9,
      });
      assert.ok(r.receiptId > 0);
    }
  }
});

Deno.test("receipt_ack marks the sender's receipt and a repeat still succeeds", () => {
  const db = freshDb();
  const msg = messageBySeq(db, send(db, "m", true))!;
  const r = writeReceipt(db, msg, "b", "accepted", "", T0)!;
  const cases: [string, { senderId: string; receiptId: number }, boolean][] = [
    ["someone else's", { senderId: "b", receiptId: r.receiptId }, false],
    ["unknown", { senderId: "a", receiptId: r.receiptId + 1 }, false],
    ["first", { senderId: "a", receiptId: r.receiptId }, true],
    ["repeat", { senderId: "a", receiptId: r.receiptId }, true],
  ];
  for (const [name, args, ok] of cases) {
    assert.deepEqual(ackReceipt(db, args, T0), { ok }, name);
  }
  assert.equal(count(db, "SELECT count(*) AS n FROM receipts WHERE acked = 1"), 1);
});

Deno.test("finalize completes a message only when no delivery is pending", () => {
  const db = freshDb();
  const seq = send(db, "m", true);
  assert.equal(finalize(db, seq), false, "still pending");
  assert.equal(count(db, `SELECT count(*) AS n FROM message_bodies WHERE seq = ${seq}`), 1);
  db.exec("UPDATE deliveries SET state = 'accepted'");
  assert.equal(finalize(db, seq), true);
  assert.equal(messageBySeq(db, seq)!.state, "completed");
  assert.equal(count(db, `SELECT count(*) AS n FROM message_bodies WHERE seq = ${seq}`), 0);
  assert.equal(finalize(db, seq), false, "already completed");
});

Deno.test("with record_retention_days 0 completion deletes the record but not receipts", () => {
  const db = freshDb();
  configure(db, { recordRetentionDays: 0 }, T0);
  const seq = send(db, "m", true);
  const msg = messageBySeq(db, seq)!;
  db.exec("UPDATE deliveries SET state = 'accepted'");
  writeReceipt(db, msg, "b", "accepted", "", T0);
  assert.equal(finalize(db, seq), true);
  assert.equal(messageBySeq(db, seq), undefined);
  assert.equal(count(db, "SELECT count(*) AS n FROM deliveries"), 0);
  assert.equal(count(db, "SELECT count(*) AS n FROM message_bodies"), 0);
  assert.equal(count(db, "SELECT count(*) AS n FROM receipts"), 1);
  assert.equal(count(db, "SELECT count(*) AS n FROM send_keys"), 1);
});

Deno.test("an early completion only applies to a scheduled message", () => {
  const db = freshDb();
  const scheduled = send(db, "s", true, T0 + 100);
  const dispatched = send(db, "d", true);
  assert.equal(completeEarly(db, dispatched, "recalled"), false);
  assert.equal(messageBySeq(db, dispatched)!.state, "dispatched");
  assert.equal(completeEarly(db, scheduled, "recalled"), true);
  assert.deepEqual(
    [messageBySeq(db, scheduled)!.state, messageBySeq(db, scheduled)!.reason],
    ["completed", "recalled"],
  );
  assert.equal(count(db, `SELECT count(*) AS n FROM message_bodies WHERE seq = ${scheduled}`), 0);
});
