import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { addEndpoint, binaryArgs, T0, testDb } from "./_testing.ts";
import { connected } from "./context.ts";
import { ackDelivery } from "./deliveries.ts";
import { housekeeping, type HousekeepingArgs, type HousekeepingCursor } from "./housekeeping.ts";
import { submitMessage } from "./messages.ts";

// spec 7.6 每小时清理: records, receipts and idempotency keys, in batches.

const DAY = 86_400_000;
const RETENTION: Omit<HousekeepingArgs, "batch"> = {
  recordRetentionMs: 7 * DAY,
  receiptRetentionMs: 7 * DAY,
  idempotencyMs: DAY,
};

/** Endpoints a and b, never online before; b then connected. */
function freshDb(): DatabaseSync {
  const db = testDb();
  for (const id of ["a", "b"]) addEndpoint(db, id, { offlineSince: null });
  connected(db, { endpointId: "b" }, T0);
  return db;
}

/** Sends at `at`; acked at `ackAt` when given (completing it), else left pending. */
function send(db: DatabaseSync, id: string, at: number, ackAt?: number): number {
  const args = binaryArgs(id, { sendAt: at, keep: true, ttlSeconds: 30 * 86_400 });
  const seq = submitMessage(db, args, at).seq!;
  if (ackAt !== undefined) ackDelivery(db, { endpointId: "b", from: "a", id }, ackAt);
  return seq;
}

function ids(db: DatabaseSync, sql: string): string[] {
  return (db.prepare(sql).all() as { v: string }[]).map((r) => String(r.v));
}

function runAll(db: DatabaseSync, batch: number, now: number): number[] {
  let cursor: HousekeepingCursor | null = null;
  const calls: number[] = [];
  for (let more = true; more;) {
    const r = housekeeping(db, { ...RETENTION, batch, cursor }, now);
    assert.deepEqual(structuredClone(r), r);
    calls.push(r.deletedMessages + r.deletedReceipts + r.deletedKeys);
    ({ more, cursor } = r);
  }
  return calls;
}

Deno.test("housekeeping deletes completed records from their completion time on", () => {
  const db = freshDb();
  const now = T0 + 10 * DAY;
  send(db, "old", T0, T0 + 1); // completed 10 days ago
  send(db, "long", T0, T0 + 9 * DAY); // sent 10 days ago, completed yesterday
  send(db, "open", T0); // still pending
  send(db, "recent", now - DAY, now - DAY + 1);
  runAll(db, 100, now);
  assert.deepEqual(ids(db, "SELECT id AS v FROM messages ORDER BY id"), ["long", "open", "recent"]);
  assert.equal(db.prepare("SELECT count(*) AS n FROM deliveries").get()!.n, 3);
  // Receipts are kept on their own clock (spec 7.6), here 7 days from their creation.
  assert.deepEqual(ids(db, "SELECT msg_id AS v FROM receipts ORDER BY receipt_id"), [
    "long",
    "recent",
  ]);
});

Deno.test("housekeeping keeps an idempotency key while its record exists or it is young", () => {
  const db = freshDb();
  const now = T0 + 10 * DAY;
  send(db, "gone", T0, T0 + 1); // record deleted now, key older than a day: deleted
  send(db, "kept", T0); // record still pending: key kept
  send(db, "young", now - 1000, now - 999); // record kept; key younger than a day
  db.exec("DELETE FROM messages WHERE id = 'young'");
  runAll(db, 100, now);
  assert.deepEqual(ids(db, "SELECT msg_id AS v FROM send_keys ORDER BY msg_id"), [
    "kept",
    "young",
  ]);
  // Once past idempotency_hours with the record gone, it goes too.
  runAll(db, 100, now + DAY);
  assert.deepEqual(ids(db, "SELECT msg_id AS v FROM send_keys ORDER BY msg_id"), ["kept"]);
});

Deno.test("housekeeping works in batches and reports more until done", () => {
  const db = freshDb();
  const now = T0 + 10 * DAY;
  for (let i = 0; i < 5; i++) send(db, `m${i}`, T0 + i, T0 + i + 1);
  send(db, "long", T0 + 10); // skipped by every batch, never blocks the cursor
  for (let i = 5; i < 7; i++) send(db, `m${i}`, T0 + 20 + i, T0 + 21 + i);
  ackDelivery(db, { endpointId: "b", from: "a", id: "long" }, now - 1);
  const first = housekeeping(db, { ...RETENTION, batch: 2 }, now);
  assert.equal(first.deletedMessages, 2);
  assert.equal(first.deletedReceipts, 2);
  assert.equal(first.more, true);
  const calls = runAll(db, 2, now);
  assert.ok(calls.length > 1);
  assert.deepEqual(ids(db, "SELECT id AS v FROM messages"), ["long"]);
  assert.equal(db.prepare("SELECT count(*) AS n FROM receipts").get()!.n, 1);
  assert.deepEqual(ids(db, "SELECT msg_id AS v FROM send_keys"), ["long"]);
  assert.equal(db.prepare("SELECT count(*) AS n FROM message_bodies").get()!.n, 0);
});
