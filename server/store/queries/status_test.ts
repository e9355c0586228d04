import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../migrations.ts";
import { ackReceipt } from "../ops/receipts.ts";
import { resetOpsContext } from "../ops/context.ts";
import { ackDelivery } from "../ops/deliveries.ts";
import { type SubmitArgs, submitMessage } from "../ops/messages.ts";
import { frameSource, messageStatus, nextDueAt, pendingReceipts } from "./status.ts";

// spec 6.4 status and receipts, 7.4 scheduler wake-up, 6.3 msg frames: main-thread reads.

const T0 = 1_750_000_000_000;
const MEMBERS = ["b", "c", "d", "e", "f"];

function freshDb(): DatabaseSync {
  resetOpsContext();
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  for (const m of MIGRATIONS) db.exec(m.sql);
  for (const id of ["a", ...MEMBERS]) {
    db.prepare(
      "INSERT INTO endpoints (id, login_hash, created_at, offline_since) VALUES (?, 'x', 0, ?)",
    )
      .run(id, T0);
  }
  db.exec("INSERT INTO groups (id, name, owner_id, created_at) VALUES ('g', 'g', 'a', 0)");
  for (const id of ["a", ...MEMBERS]) {
    db.prepare("INSERT INTO group_members (group_id, endpoint_id, joined_at) VALUES ('g', ?, 0)")
      .run(id);
  }
  return db;
}

function send(db: DatabaseSync, id: string, over: Partial<SubmitArgs> = {}): number {
  return submitMessage(db, {
    senderId: "a",
    id,
    fingerprint: new Uint8Array([1]),
    toKind: "group",
    toId: "g",
    body: new TextEncoder().encode("你好 <&>"),
    bodyEnc: "utf8",
    contentType: "text/plain; charset=utf-8",
    meta: '{"k":"v"}',
    sendAt: T0,
    keep: false,
    ttlSeconds: 60,
    receipt: true,
    ...over,
  }, T0).seq!;
}

Deno.test("status pages the recipients by endpoint id with counts of every state", () => {
  const db = freshDb();
  send(db, "m");
  ackDelivery(db, { endpointId: "c", from: "a", id: "m" }, T0 + 1);
  const pages: { cursor: string; limit: number; items: string[]; next: string }[] = [
    { cursor: "", limit: 2, items: ["b", "c"], next: "c" },
    { cursor: "c", limit: 2, items: ["d", "e"], next: "e" },
    { cursor: "e", limit: 2, items: ["f"], next: "" },
    { cursor: "", limit: 5, items: ["b", "c", "d", "e", "f"], next: "" },
    { cursor: "f", limit: 5, items: [], next: "" },
  ];
  for (const p of pages) {
    const s = messageStatus(db, "a", "m", p.cursor, p.limit)!;
    assert.deepEqual(s.items.map((i) => i.endpointId), p.items, `after "${p.cursor}"`);
    assert.equal(s.nextCursor, p.next, `after "${p.cursor}"`);
    assert.deepEqual(s.counts, {
      pending: 4,
      accepted: 1,
      recalled: 0,
      expired: 0,
      dropped: 0,
      rejected: 0,
    });
    assert.deepEqual([s.id, s.state, s.reason, s.sendAtMs], ["m", "dispatched", "", T0]);
  }
  const first = messageStatus(db, "a", "m", "", 2)!;
  assert.deepEqual(first.items[1], { endpointId: "c", state: "accepted", reason: "" });
});

Deno.test("status is null for someone else's message or a deleted record", () => {
  const db = freshDb();
  const seq = send(db, "m");
  assert.equal(messageStatus(db, "b", "m", "", 10), null);
  assert.equal(messageStatus(db, "a", "nope", "", 10), null);
  db.exec(`DELETE FROM messages WHERE seq = ${seq}`); // key remains: still not_found (spec 6.4)
  assert.equal(messageStatus(db, "a", "m", "", 10), null);
});

Deno.test("pending receipts are the sender's unacked ones after the given id", () => {
  const db = freshDb();
  send(db, "m");
  for (const id of ["b", "c", "d"]) ackDelivery(db, { endpointId: id, from: "a", id: "m" }, T0 + 1);
  const all = pendingReceipts(db, "a", 0, 10);
  assert.deepEqual(all.map((r) => [r.endpointId, r.state, r.msgId, r.atMs]), [
    ["b", "accepted", "m", T0 + 1],
    ["c", "accepted", "m", T0 + 1],
    ["d", "accepted", "m", T0 + 1],
  ]);
  ackReceipt(db, { senderId: "a", receiptId: all[1].receiptId }, T0 + 2);
  const cases: [after: number, limit: number, want: string[]][] = [
    [0, 10, ["b", "d"]],
    [0, 1, ["b"]],
    [all[0].receiptId, 10, ["d"]],
    [all[2].receiptId, 10, []],
  ];
  for (const [after, limit, want] of cases) {
    assert.deepEqual(pendingReceipts(db, "a", after, limit).map((r) => r.endpointId), want);
  }
  assert.deepEqual(pendingReceipts(db, "b", 0, 10), []);
});

Deno.test("nextDueAt is the earliest scheduled send time", () => {
  const db = freshDb();
  assert.equal(nextDueAt(db), null);
  send(db, "later", { sendAt: T0 + 500 });
  send(db, "sooner", { sendAt: T0 + 200 });
  send(db, "now");
  assert.equal(nextDueAt(db), T0 + 200);
});

Deno.test("frameSource returns the fields and body until the message completes", () => {
  const db = freshDb();
  const seq = send(db, "m", { toKind: "endpoint", toId: "b" });
  const f = frameSource(db, seq)!;
  assert.deepEqual(f, {
    id: "m",
    senderId: "a",
    destKind: "endpoint",
    destId: "b",
    body: new TextEncoder().encode("你好 <&>"),
    bodyEnc: "utf8",
    contentType: "text/plain; charset=utf-8",
    meta: '{"k":"v"}',
    sendAt: T0,
  });
  ackDelivery(db, { endpointId: "b", from: "a", id: "m" }, T0 + 1);
  assert.equal(frameSource(db, seq), null);
});
