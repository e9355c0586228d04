import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { OpError } from "../op_error.ts";
import { BatchRunner } from "../batch.ts";
import { addEndpoint, addGroup, binaryArgs, T0, testDb } from "./_testing.ts";
import { connected, resetOpsContext } from "./context.ts";
import {
  ackDelivery,
  ackTimeout,
  claimDeliveries,
  expireDeliveries,
  rejectTooLarge,
  unmarkDelivery,
} from "./deliveries.ts";
import { recallMessage, type SubmitArgs, submitMessage } from "./messages.ts";

// spec 7.5, 7.6: push marks, ack timeouts, acks and expiry of single deliveries.

const TTL_MS = 600_000;

/** Endpoints a and b, offline since T0; b then connected as "k1". */
function freshDb(): DatabaseSync {
  const db = testDb();
  for (const id of ["a", "b"]) addEndpoint(db, id);
  connected(db, { endpointId: "b", connCode: "k1" }, T0);
  return db;
}

/** Submits message `id` from a to b at its `sendAt`; returns its seq. */
function send(db: DatabaseSync, id: string, over: Partial<SubmitArgs> = {}): number {
  const args = binaryArgs(id, {
    fingerprint: new Uint8Array([7]),
    body: new Uint8Array([1, 2]),
    ttlSeconds: TTL_MS / 1000,
    ...over,
  });
  return submitMessage(db, args, over.sendAt ?? T0).seq!;
}

function row(db: DatabaseSync, seq: number): Record<string, unknown> {
  return { ...db.prepare("SELECT * FROM deliveries WHERE seq = ? AND endpoint_id = 'b'").get(seq) };
}

function msgState(db: DatabaseSync, seq: number): unknown {
  return db.prepare("SELECT state FROM messages WHERE seq = ?").get(seq)?.state;
}

function receipts(db: DatabaseSync): string[] {
  return (db.prepare("SELECT msg_id, state, reason FROM receipts ORDER BY receipt_id").all() as {
    msg_id: string;
    state: string;
    reason: string;
  }[]).map((r) => `${r.msg_id}:${r.state}:${r.reason}`);
}

Deno.test("claim marks unpushed pending deliveries in send_at, seq order up to the limit", () => {
  const db = freshDb();
  const late = send(db, "late", { sendAt: T0 + 20 });
  const early = send(db, "early", { sendAt: T0 + 10 });
  const first = send(db, "first", { sendAt: T0 });
  const r = claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 2 }, T0 + 30);
  assert.deepEqual(structuredClone(r), r, "plain cloneable data");
  assert.deepEqual(r.claimed, [
    { seq: first, msgId: "first", senderId: "a", keep: false, expireAt: null, sendAt: T0 },
    { seq: early, msgId: "early", senderId: "a", keep: false, expireAt: null, sendAt: T0 + 10 },
  ]);
  assert.deepEqual(
    [row(db, first).pushed_conn, row(db, first).pushed_at, row(db, first).attempts],
    ["k1", T0 + 30, 1],
  );
  // Marked ones are not claimed again, by this or another connection (spec 7.5 step 3).
  const more = claimDeliveries(db, { endpointId: "b", connCode: "k2", limit: 5 }, T0 + 31);
  assert.deepEqual(more.claimed.map((c) => c.seq), [late]);
  assert.deepEqual(claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 0 }, T0), {
    claimed: [],
  });
});

Deno.test("claim leaves deliveries past expire_at to the cleanup loop", () => {
  const db = freshDb();
  const kept = send(db, "kept", { keep: true });
  const r = claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 5 }, T0 + TTL_MS);
  assert.deepEqual(r.claimed, []);
  assert.equal(row(db, kept).pushed_conn, null);
});

Deno.test("unmark clears a push mark only while it is still this connection's", () => {
  const db = freshDb();
  const seq = send(db, "m");
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
  assert.deepEqual(unmarkDelivery(db, { seq, endpointId: "b", connCode: "k2" }, T0), {
    cleared: false,
  });
  assert.equal(row(db, seq).pushed_conn, "k1");
  assert.deepEqual(unmarkDelivery(db, { seq, endpointId: "b", connCode: "k1" }, T0), {
    cleared: true,
  });
  assert.equal(row(db, seq).pushed_conn, null);
  assert.equal(row(db, seq).attempts, 1);
});

Deno.test("a frame too large for the connection rejects the delivery with a receipt", () => {
  const db = freshDb();
  const seq = send(db, "big");
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
  const r = rejectTooLarge(db, { seq, endpointId: "b", connCode: "k1" }, T0 + 1);
  assert.equal(r.rejected, true);
  assert.equal(r.msgId, "big");
  assert.deepEqual(receipts(db), ["big:rejected:too_large"]);
  assert.equal(row(db, seq).state, "rejected");
  assert.equal(msgState(db, seq), "completed");
  const again = rejectTooLarge(db, { seq, endpointId: "b", connCode: "k1" }, T0 + 2);
  assert.equal(again.rejected, false);
  assert.deepEqual(again.receipts, []);
});

Deno.test("an ack timeout drops, expires or repushes by keep and expire_at", () => {
  // spec 7.5 step 5.
  const cases: {
    name: string;
    keep: boolean;
    at: number;
    conn?: string;
    want: string;
    state: string;
    pushed: string | null;
    receipts: string[];
  }[] = [
    {
      name: "not kept",
      keep: false,
      at: T0 + 300_000,
      want: "dropped",
      state: "dropped",
      pushed: "k1",
      receipts: ["m:dropped:not_acked"],
    },
    {
      name: "kept, past expire_at",
      keep: true,
      at: T0 + TTL_MS,
      want: "expired",
      state: "expired",
      pushed: "k1",
      receipts: ["m:expired:ttl"],
    },
    {
      name: "kept, before expire_at",
      keep: true,
      at: T0 + 300_000,
      want: "repush",
      state: "pending",
      pushed: null,
      receipts: [],
    },
    {
      name: "another connection's timer",
      keep: false,
      at: T0 + 300_000,
      conn: "k0",
      want: "none",
      state: "pending",
      pushed: "k1",
      receipts: [],
    },
  ];
  for (const c of cases) {
    const db = freshDb();
    const seq = send(db, "m", { keep: c.keep });
    claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
    const r = ackTimeout(db, { seq, endpointId: "b", connCode: c.conn ?? "k1" }, c.at);
    assert.equal(r.outcome, c.want, c.name);
    assert.deepEqual([r.msgId, r.senderId], ["m", "a"], c.name);
    assert.deepEqual(
      [row(db, seq).state, row(db, seq).pushed_conn],
      [c.state, c.pushed],
      c.name,
    );
    assert.deepEqual(receipts(db), c.receipts, c.name);
    assert.equal(msgState(db, seq), c.state === "pending" ? "dispatched" : "completed", c.name);
  }
});

Deno.test("an ack timeout after the ack changes nothing", () => {
  const db = freshDb();
  const seq = send(db, "m");
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
  ackDelivery(db, { endpointId: "b", from: "a", id: "m" }, T0 + 1);
  const r = ackTimeout(db, { seq, endpointId: "b", connCode: "k1" }, T0 + 300_000);
  assert.equal(r.outcome, "none");
  assert.deepEqual(receipts(db), ["m:accepted:"]);
});

Deno.test("ack accepts a pending delivery pushed to any connection, once", () => {
  const db = freshDb();
  const seq = send(db, "m");
  claimDeliveries(db, { endpointId: "b", connCode: "old", limit: 1 }, T0);
  const first = ackDelivery(db, { endpointId: "b", from: "a", id: "m" }, T0 + 5);
  assert.equal(first.result, "accepted");
  assert.equal(first.changed, true);
  assert.equal(first.wasPushedTo, "old");
  assert.equal(first.completed, true, "the only delivery ended: the message completed");
  assert.deepEqual(first.receipts.map((r) => [r.msgId, r.endpointId, r.state, r.atMs]), [
    ["m", "b", "accepted", T0 + 5],
  ]);
  assert.equal(msgState(db, seq), "completed");
  // A repeated ack is a success with no new receipt (spec 6.3).
  const again = ackDelivery(db, { endpointId: "b", from: "a", id: "m" }, T0 + 6);
  assert.deepEqual(again, {
    result: "accepted",
    changed: false,
    receipts: [],
    wasPushedTo: null,
    completed: false,
    claimed: [],
  });
  assert.equal(receipts(db).length, 1);
});

Deno.test("ack of a delivery that already ended answers its final state", () => {
  const cases: { name: string; end: (db: DatabaseSync, seq: number) => void; want: string }[] = [
    {
      name: "recalled",
      end: (db) => recallMessage(db, { senderId: "a", id: "m" }, T0 + 1),
      want: "recalled",
    },
    {
      name: "expired",
      end: (db) => expireDeliveries(db, { limit: 10 }, T0 + TTL_MS),
      want: "expired",
    },
    {
      name: "dropped",
      end: (db, seq) => {
        claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
        db.exec(`UPDATE deliveries SET keep = 0 WHERE seq = ${seq}`);
        ackTimeout(db, { seq, endpointId: "b", connCode: "k1" }, T0 + 1);
      },
      want: "dropped",
    },
  ];
  for (const c of cases) {
    const db = freshDb();
    const seq = send(db, "m", { keep: true });
    c.end(db, seq);
    const before = receipts(db);
    const r = ackDelivery(db, { endpointId: "b", from: "a", id: "m" }, T0 + TTL_MS + 1);
    assert.deepEqual(
      r,
      {
        result: c.want,
        changed: false,
        receipts: [],
        wasPushedTo: null,
        completed: false,
        claimed: [],
      },
      c.name,
    );
    assert.deepEqual(receipts(db), before, c.name);
  }
});

Deno.test("ack of an unknown message or of someone else's delivery is not_found", () => {
  const db = freshDb();
  send(db, "m");
  const cases: [string, { endpointId: string; from: string; id: string }][] = [
    ["unknown id", { endpointId: "b", from: "a", id: "nope" }],
    ["wrong sender", { endpointId: "b", from: "b", id: "m" }],
    ["not a recipient", { endpointId: "a", from: "a", id: "m" }],
  ];
  for (const [name, args] of cases) {
    assert.throws(
      () => ackDelivery(db, args, T0),
      (err: unknown) => err instanceof OpError && err.code === "not_found",
      name,
    );
  }
});

Deno.test("expiry ends unpushed deliveries past expire_at and writes their receipts", () => {
  const db = freshDb();
  resetOpsContext(); // b offline since T0: not-kept deliveries wait until T0 + grace.
  const kept = send(db, "kept", { keep: true });
  const graced = send(db, "graced");
  const pushed = send(db, "pushed", { keep: true });
  db.exec(`UPDATE deliveries SET pushed_conn = 'k1' WHERE seq = ${pushed}`);
  assert.deepEqual(expireDeliveries(db, { limit: 10 }, T0 + 59_999), { changed: 0, receipts: [] });
  const atGrace = expireDeliveries(db, { limit: 10 }, T0 + 60_000);
  assert.equal(atGrace.changed, 1);
  assert.deepEqual(atGrace.receipts.map((r) => [r.msgId, r.state, r.reason]), [
    ["graced", "dropped", "offline"],
  ]);
  const atTtl = expireDeliveries(db, { limit: 10 }, T0 + TTL_MS);
  assert.deepEqual(atTtl.receipts.map((r) => [r.msgId, r.state, r.reason]), [
    ["kept", "expired", "ttl"],
  ]);
  assert.deepEqual([row(db, graced).state, row(db, kept).state], ["dropped", "expired"]);
  assert.deepEqual([msgState(db, graced), msgState(db, kept)], ["completed", "completed"]);
  // Pushed deliveries belong to the ack timeout (spec 7.5 清理循环).
  assert.equal(row(db, pushed).state, "pending");
});

Deno.test("expiry respects its limit", () => {
  const db = freshDb();
  for (const id of ["x", "y", "z"]) send(db, id, { keep: true });
  assert.equal(expireDeliveries(db, { limit: 2 }, T0 + TTL_MS).changed, 2);
  assert.equal(expireDeliveries(db, { limit: 2 }, T0 + TTL_MS).changed, 1);
  assert.equal(expireDeliveries(db, { limit: 2 }, T0 + TTL_MS).changed, 0);
});

Deno.test("ack reports completed only when it ends a group message's last pending delivery", () => {
  const db = testDb();
  for (const id of ["a", "b", "c"]) addEndpoint(db, id);
  addGroup(db, "g", ["a", "b", "c"]);
  submitMessage(db, { ...binaryArgs("gm"), toKind: "group", toId: "g" }, T0);
  const b = ackDelivery(db, { endpointId: "b", from: "a", id: "gm" }, T0 + 1);
  assert.deepEqual([b.changed, b.completed], [true, false], "c's delivery is still pending");
  const c = ackDelivery(db, { endpointId: "c", from: "a", id: "gm" }, T0 + 2);
  assert.deepEqual([c.changed, c.completed], [true, true]);
});

Deno.test("an ack with a lent claim marks the next deliveries in order, up to its limit", () => {
  const db = freshDb();
  const seqs = ["m1", "m2", "m3", "m4"].map((id) => send(db, id));
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 1 }, T0);
  const r = ackDelivery(db, {
    endpointId: "b",
    from: "a",
    id: "m1",
    claim: { connCode: "k1", limit: 2 },
  }, T0 + 1);
  assert.equal(r.result, "accepted");
  assert.deepEqual(r.claimed.map((c) => c.msgId), ["m2", "m3"]);
  assert.deepEqual(
    seqs.map((s) => row(db, s).pushed_conn),
    ["k1", "k1", "k1", null],
    "m1 keeps its mark (now accepted), m2 and m3 are marked, m4 waits",
  );
  assert.equal(row(db, seqs[0]).state, "accepted");
});

Deno.test("an ack that fails rolls its lent claim back with it", () => {
  const db = freshDb();
  const seq = send(db, "m1");
  const args = { endpointId: "b", from: "a", id: "nope", claim: { connCode: "k1", limit: 4 } };
  const ops = { "delivery.ack": ackDelivery };
  const runner = new BatchRunner(db, ops);
  const out = runner.run([[1, "delivery.ack", args, T0]]);
  assert.equal(out.ok, true);
  assert.equal(out.ok && out.results[0][1], false, "not_found");
  assert.equal(row(db, seq).pushed_conn, null, "the claim went with the failed ack");
});
