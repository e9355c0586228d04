import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import {
  addEndpoint as insertEndpoint,
  addGroup,
  codeOf,
  type EndpointFixture,
  T0,
  testDb,
} from "./_testing.ts";
import { configure, connected } from "./context.ts";
import { ackDelivery } from "./deliveries.ts";
import { dispatchDue, recallMessage, type SubmitArgs, submitMessage } from "./messages.ts";
import { PLACEMENT_CASES, TARGET_CASES } from "./_message_cases.ts";

// spec 7.3, 7.4, 6.4: submit, dispatch, recall. Real SQLite in memory, injected clock.

/** Inserts an endpoint that was never online unless `o` says otherwise (offline_since NULL). */
function addEndpoint(db: DatabaseSync, id: string, o: EndpointFixture = {}): void {
  insertEndpoint(db, id, { offlineSince: null, ...o });
}

let counter = 0;
function req(over: Partial<SubmitArgs> = {}): SubmitArgs {
  return {
    senderId: "a",
    id: `m${++counter}`,
    fingerprint: new Uint8Array([1, 2, 3]),
    toKind: "endpoint",
    toId: "b",
    body: new TextEncoder().encode("hello"),
    bodyEnc: "utf8",
    contentType: "text/plain",
    meta: "{}",
    sendAt: T0,
    keep: false,
    ttlSeconds: 600,
    receipt: true,
    ...over,
  };
}

interface DeliveryRow {
  state: string;
  reason: string;
  expire_at: number | null;
  keep: number;
  send_at: number;
}

function delivery(db: DatabaseSync, seq: number, endpointId: string): DeliveryRow | undefined {
  return db.prepare("SELECT * FROM deliveries WHERE seq = ? AND endpoint_id = ?")
    .get(seq, endpointId) as DeliveryRow | undefined;
}

function message(db: DatabaseSync, seq: number): { state: string; reason: string } | undefined {
  const row = db.prepare("SELECT state, reason FROM messages WHERE seq = ?").get(seq);
  return row === undefined ? undefined : { state: String(row.state), reason: String(row.reason) };
}

function hasBody(db: DatabaseSync, seq: number): boolean {
  return db.prepare("SELECT 1 AS x FROM message_bodies WHERE seq = ?").get(seq) !== undefined;
}

function receiptStates(db: DatabaseSync): string[] {
  return (db.prepare("SELECT endpoint_id, state, reason FROM receipts ORDER BY receipt_id")
    .all() as { endpoint_id: string; state: string; reason: string }[])
    .map((r) => `${r.endpoint_id}:${r.state}:${r.reason}`);
}

Deno.test("submit dispatches at once and places each delivery by presence, keep and grace", () => {
  // spec 7.4 step 2.
  const cases = PLACEMENT_CASES;
  for (const c of cases) {
    const db = testDb();
    addEndpoint(db, "a");
    addEndpoint(db, "b", { offlineSince: c.offlineSince ?? null });
    if (c.connected) connected(db, { endpointId: "b", connCode: "c1" }, T0);
    const r = submitMessage(db, req({ keep: c.keep }), T0);
    assert.equal(r.state, c.want.msg, c.name);
    assert.equal(r.duplicate, false, c.name);
    const d = delivery(db, r.seq!, "b")!;
    assert.deepEqual(
      { state: d.state, reason: d.reason, expireAt: d.expire_at },
      { state: c.want.state, reason: c.want.reason, expireAt: c.want.expireAt },
      c.name,
    );
    assert.deepEqual(r.wake, c.want.state === "pending" ? ["b"] : [], c.name);
    assert.deepEqual(r.receipts.map((x) => `${x.endpointId}:${x.state}:${x.reason}`), c.receipts);
    assert.deepEqual(receiptStates(db), c.receipts, c.name);
    // Finalize deletes the body exactly when the message completes (spec 7.6).
    assert.equal(hasBody(db, r.seq!), c.want.msg !== "completed", c.name);
    assert.equal(message(db, r.seq!)!.state, c.want.msg, c.name);
  }
});

Deno.test("submit validates the target after the idempotency check", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  addEndpoint(db, "off", { enabled: false });
  addEndpoint(db, "c");
  addGroup(db, "g1", ["b", "c"]);
  const cases = TARGET_CASES;
  for (const [name, over, code] of cases) {
    assert.equal(codeOf(() => submitMessage(db, req(over), T0)), code, name);
  }
  // Nothing of a refused submit is left behind.
  assert.equal((db.prepare("SELECT count(*) AS n FROM send_keys").get() as { n: number }).n, 0);
});

Deno.test("a repeated submit returns the original answer and conflicts on a different request", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b", { offlineSince: T0 });
  const first = submitMessage(db, req({ id: "dup", sendAt: T0 + 5000 }), T0);
  assert.equal(first.state, "scheduled");
  // The target is disabled after the first submit: the retry still succeeds (spec 7.3 step 2).
  db.exec("UPDATE endpoints SET enabled = 0 WHERE id = 'b'");
  const again = submitMessage(db, req({ id: "dup", sendAt: T0 + 9000 }), T0 + 4000);
  assert.deepEqual(again, {
    seq: first.seq,
    sendAt: T0 + 5000,
    state: "scheduled",
    duplicate: true,
    wake: [],
    receipts: [],
  });
  // The state is the current one.
  dispatchDue(db, {}, T0 + 5000);
  const later = submitMessage(db, req({ id: "dup" }), T0 + 6000);
  assert.equal(later.state, "completed");
  assert.equal(later.sendAt, T0 + 5000);
  // A different request under the same id conflicts, before the (failing) target check.
  const other = req({ id: "dup", fingerprint: new Uint8Array([9]) });
  assert.equal(codeOf(() => submitMessage(db, other, T0 + 7000)), "conflict");
  assert.equal((db.prepare("SELECT count(*) AS n FROM messages").get() as { n: number }).n, 1);
});

Deno.test("a repeat after the record is gone answers completed from the key", () => {
  const db = testDb();
  configure(db, { recordRetentionDays: 0 }, T0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const first = submitMessage(db, req({ id: "gone" }), T0);
  assert.equal(first.state, "completed");
  // record_retention_days 0: the record and its deliveries go with the completion (spec 7.6).
  assert.equal(message(db, first.seq!), undefined);
  assert.equal(delivery(db, first.seq!, "b"), undefined);
  assert.equal(hasBody(db, first.seq!), false);
  assert.equal(receiptStates(db).length, 1, "receipts are kept independently");
  const again = submitMessage(db, req({ id: "gone" }), T0 + 10);
  assert.deepEqual(again, {
    sendAt: T0,
    state: "completed",
    duplicate: true,
    wake: [],
    receipts: [],
  });
});

Deno.test("the sender quota counts unfinished messages and 0 means unlimited", () => {
  const cases: [number, string[]][] = [
    [2, ["ok", "ok", "quota_exceeded"]],
    [0, ["ok", "ok", "ok"]],
  ];
  for (const [max, want] of cases) {
    const db = testDb();
    configure(db, { maxPendingPerSender: max }, T0);
    addEndpoint(db, "a");
    addEndpoint(db, "b", { offlineSince: T0 });
    const got = want.map(() => codeOf(() => submitMessage(db, req({ sendAt: T0 + 1000 }), T0)));
    assert.deepEqual(got, want, `max ${max}`);
  }
  // Completed messages no longer count.
  const db = testDb();
  configure(db, { maxPendingPerSender: 1 }, T0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  assert.equal(submitMessage(db, req(), T0).state, "completed");
  assert.equal(codeOf(() => submitMessage(db, req(), T0)), "ok");
});

Deno.test("a full receiver queue rejects the new delivery with queue_full and a receipt", () => {
  const db = testDb();
  configure(db, { maxPendingPerReceiver: 2 }, T0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  connected(db, { endpointId: "b" }, T0);
  const states = [1, 2, 3].map(() => submitMessage(db, req(), T0));
  assert.deepEqual(states.map((s) => s.state), ["dispatched", "dispatched", "completed"]);
  assert.deepEqual(delivery(db, states[2].seq!, "b")!.reason, "queue_full");
  assert.deepEqual(receiptStates(db), ["b:rejected:queue_full"]);
  assert.deepEqual(states[2].receipts.map((r) => r.reason), ["queue_full"]);
});

Deno.test("due messages dispatch in send_at, seq order up to the limit", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  connected(db, { endpointId: "b" }, T0);
  const late = submitMessage(db, req({ sendAt: T0 + 300 }), T0);
  const early = submitMessage(db, req({ sendAt: T0 + 100 }), T0);
  const tie = submitMessage(db, req({ sendAt: T0 + 100 }), T0);
  const future = submitMessage(db, req({ sendAt: T0 + 9000 }), T0);
  assert.deepEqual([late, early, tie, future].map((r) => r.state), Array(4).fill("scheduled"));
  assert.deepEqual(dispatchDue(db, {}, T0 + 99), {
    dispatched: 0,
    wake: [],
    receipts: [],
    failed: [],
    nextDueAt: T0 + 100,
  });
  const first = dispatchDue(db, { limit: 2 }, T0 + 500);
  assert.deepEqual(first, {
    dispatched: 2,
    wake: ["b"],
    receipts: [],
    failed: [],
    nextDueAt: T0 + 300,
  });
  assert.equal(message(db, early.seq!)!.state, "dispatched");
  assert.equal(message(db, tie.seq!)!.state, "dispatched");
  assert.equal(message(db, late.seq!)!.state, "scheduled");
  const second = dispatchDue(db, { limit: 2 }, T0 + 500);
  assert.deepEqual(second, {
    dispatched: 1,
    wake: ["b"],
    receipts: [],
    failed: [],
    nextDueAt: T0 + 9000,
  });
  // Deliveries carry the message's send_at (spec 7.4 step 2).
  assert.equal(delivery(db, late.seq!, "b")!.send_at, T0 + 300);
});

Deno.test("a target disabled while scheduled gets a rejected delivery at dispatch", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const r = submitMessage(db, req({ sendAt: T0 + 100 }), T0);
  db.exec("UPDATE endpoints SET enabled = 0 WHERE id = 'b'");
  const out = dispatchDue(db, {}, T0 + 100);
  assert.deepEqual(out.receipts.map((x) => [x.endpointId, x.state, x.reason]), [
    ["b", "rejected", "endpoint_disabled"],
  ]);
  assert.equal(message(db, r.seq!)!.state, "completed");
});

Deno.test("group dispatch delivers to the members at dispatch time minus the sender", () => {
  const db = testDb();
  for (const id of ["a", "b", "c", "d"]) addEndpoint(db, id, { offlineSince: T0 });
  addEndpoint(db, "x", { enabled: false });
  addGroup(db, "g", ["a", "b", "c", "x"]);
  const r = submitMessage(db, req({ toKind: "group", toId: "g", sendAt: T0 + 100 }), T0);
  // Membership changes before the send time count (spec 7.4 step 1).
  db.exec("DELETE FROM group_members WHERE endpoint_id = 'c'");
  db.exec("INSERT INTO group_members VALUES ('g', 'd', 0)");
  const out = dispatchDue(db, {}, T0 + 100);
  assert.deepEqual(out.wake, ["b", "d"]);
  const rows = db.prepare("SELECT endpoint_id, state, reason FROM deliveries ORDER BY endpoint_id")
    .all() as { endpoint_id: string; state: string; reason: string }[];
  assert.deepEqual(rows.map((d) => `${d.endpoint_id}:${d.state}:${d.reason}`), [
    "b:pending:",
    "d:pending:",
    "x:rejected:endpoint_disabled",
  ]);
  assert.equal(message(db, r.seq!)!.state, "dispatched");
});

Deno.test("a group message with no recipients completes with a message-level receipt", () => {
  const cases: { name: string; change: string; reason: string }[] = [
    {
      name: "sender left",
      change: "DELETE FROM group_members WHERE endpoint_id = 'a'",
      reason: "sender_left",
    },
    {
      name: "alone",
      change: "DELETE FROM group_members WHERE endpoint_id = 'b'",
      reason: "no_recipients",
    },
  ];
  for (const c of cases) {
    const db = testDb();
    addEndpoint(db, "a");
    addEndpoint(db, "b");
    addGroup(db, "g", ["a", "b"]);
    const r = submitMessage(db, req({ toKind: "group", toId: "g", sendAt: T0 + 100 }), T0);
    db.exec(c.change);
    const out = dispatchDue(db, {}, T0 + 100);
    assert.equal(out.dispatched, 1, c.name);
    assert.deepEqual(message(db, r.seq!), { state: "completed", reason: c.reason }, c.name);
    assert.equal(hasBody(db, r.seq!), false, c.name);
    assert.equal(delivery(db, r.seq!, "b"), undefined, c.name);
    // spec 6.4: endpoint_id "" and state rejected.
    assert.deepEqual(receiptStates(db), [`:rejected:${c.reason}`], c.name);
    assert.deepEqual(out.receipts.map((x) => x.endpointId), [""], c.name);
  }
});

Deno.test("recall answers by the deliveries' states and never writes a recalled receipt", () => {
  const cases: {
    name: string;
    group: boolean;
    scheduled?: boolean;
    before: (db: DatabaseSync, id: string) => void;
    want: { result: string; recalled: number; accepted: number; other: number };
    revoked: string[];
  }[] = [
    {
      name: "scheduled",
      group: false,
      scheduled: true,
      before: () => {},
      want: { result: "recalled", recalled: 0, accepted: 0, other: 0 },
      revoked: [],
    },
    {
      name: "pending and pushed",
      group: false,
      before: (db) => db.exec("UPDATE deliveries SET pushed_conn = 'k1'"),
      want: { result: "recalled", recalled: 1, accepted: 0, other: 0 },
      revoked: ["b@k1"],
    },
    {
      name: "recall after ack",
      group: false,
      before: (db, id) => ackDelivery(db, { endpointId: "b", from: "a", id }, T0 + 1),
      want: { result: "failed", recalled: 0, accepted: 1, other: 0 },
      revoked: [],
    },
    {
      name: "group with one accepted and one dropped",
      group: true,
      before: (db, id) => {
        ackDelivery(db, { endpointId: "b", from: "a", id }, T0 + 1);
        db.exec(
          "UPDATE deliveries SET state = 'dropped', reason = 'offline' WHERE endpoint_id = 'd'",
        );
      },
      want: { result: "partial", recalled: 1, accepted: 1, other: 1 },
      revoked: [],
    },
  ];
  for (const c of cases) {
    const db = testDb();
    for (const id of ["a", "b", "c", "d"]) addEndpoint(db, id, { offlineSince: T0 });
    addGroup(db, "g", ["a", "b", "c", "d"]);
    const to: Partial<SubmitArgs> = c.group ? { toKind: "group", toId: "g" } : {};
    const sub = submitMessage(db, req({ ...to, id: "r", sendAt: c.scheduled ? T0 + 50 : T0 }), T0);
    c.before(db, "r");
    const receiptsBefore = receiptStates(db);
    const got = recallMessage(db, { senderId: "a", id: "r" }, T0 + 2);
    const { revoked, ...counts } = got;
    assert.deepEqual(counts, c.want, c.name);
    assert.deepEqual(revoked.map((x) => `${x.endpointId}@${x.connCode}`), c.revoked, c.name);
    assert.deepEqual(receiptStates(db), receiptsBefore, `${c.name}: no receipt for recalled`);
    assert.equal(message(db, sub.seq!)!.state, "completed", c.name);
    assert.equal(hasBody(db, sub.seq!), false, c.name);
    // A repeated recall answers the same.
    const again = recallMessage(db, { senderId: "a", id: "r" }, T0 + 3);
    assert.deepEqual({ ...again, revoked: [] }, { ...got, revoked: [] }, `${c.name} again`);
  }
});

Deno.test("recall of a scheduled message completes it with reason recalled", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const sub = submitMessage(db, req({ id: "s", sendAt: T0 + 100 }), T0);
  recallMessage(db, { senderId: "a", id: "s" }, T0 + 1);
  assert.deepEqual(message(db, sub.seq!), { state: "completed", reason: "recalled" });
  assert.equal(dispatchDue(db, {}, T0 + 200).dispatched, 0);
  assert.equal(delivery(db, sub.seq!, "b"), undefined);
});

Deno.test("ack after recall returns the final state", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b", { offlineSince: T0 });
  submitMessage(db, req({ id: "race" }), T0);
  recallMessage(db, { senderId: "a", id: "race" }, T0 + 1);
  const ack = ackDelivery(db, { endpointId: "b", from: "a", id: "race" }, T0 + 2);
  assert.deepEqual(ack, {
    result: "recalled",
    changed: false,
    receipts: [],
    wasPushedTo: null,
    completed: false,
    claimed: [],
  });
  assert.deepEqual(receiptStates(db), []);
});

Deno.test("recall of a deleted record fails while its key remains, else not_found", () => {
  const db = testDb();
  configure(db, { recordRetentionDays: 0 }, T0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  submitMessage(db, req({ id: "k" }), T0);
  assert.deepEqual(recallMessage(db, { senderId: "a", id: "k" }, T0 + 1), {
    result: "failed",
    recalled: 0,
    accepted: 0,
    other: 0,
    revoked: [],
  });
  assert.equal(codeOf(() => recallMessage(db, { senderId: "a", id: "none" }, T0)), "not_found");
  assert.equal(codeOf(() => recallMessage(db, { senderId: "b", id: "k" }, T0)), "not_found");
});

Deno.test("dispatchDue() rolls back a failing message alone and leaves it out of nextDueAt", () => {
  const db = testDb();
  for (const id of ["a", "b", "c"]) addEndpoint(db, id);
  const kept = { sendAt: T0 + 100, keep: true, ttlSeconds: 600 };
  const ok1 = submitMessage(db, req(kept), T0);
  const bad = submitMessage(db, req({ ...kept, toId: "c" }), T0);
  const ok2 = submitMessage(db, req(kept), T0);
  db.exec(`CREATE TRIGGER fail_c BEFORE INSERT ON deliveries WHEN NEW.endpoint_id = 'c'
    BEGIN SELECT RAISE(ABORT, 'boom'); END`);
  db.exec("BEGIN");
  const out = dispatchDue(db, {}, T0 + 100);
  db.exec("COMMIT");
  assert.equal(out.dispatched, 2);
  assert.deepEqual(out.failed, [{ seq: bad.seq!, error: "boom" }]);
  assert.equal(out.nextDueAt, null, "the failed one is not due again in this run");
  assert.equal(message(db, ok1.seq!)!.state, "dispatched");
  assert.equal(message(db, ok2.seq!)!.state, "dispatched");
  assert.equal(message(db, bad.seq!)!.state, "scheduled");
  // Skipped while it waits for its retry; dispatched once the fault is gone.
  assert.equal(dispatchDue(db, { skip: [bad.seq!] }, T0 + 200).dispatched, 0);
  db.exec("DROP TRIGGER fail_c");
  const retry = dispatchDue(db, {}, T0 + 300);
  assert.equal(retry.dispatched, 1);
  assert.deepEqual(retry.failed, []);
  assert.equal(message(db, bad.seq!)!.state, "dispatched");
});
