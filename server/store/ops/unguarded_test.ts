// The ops the writer runs without a savepoint (`unguardedOps`) must throw their refusals
// (`OpError`s) only before their first write: the batch runner reports such a refusal alone and
// commits the rest of the batch, so a write made before it would be committed too. Every
// expected failure of each op is run here through the real BatchRunner with a good op after it
// in the same batch: the batch must commit, the failing op must report its own code, and only
// the good op's rows may change (SQLite's `total_changes()`).
import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { BatchRunner } from "../batch.ts";
import type { WireOp, WireResult } from "../writer_protocol.ts";
import { addEndpoint, addGroup, binaryArgs, T0, testDb } from "./_testing.ts";
import { configure } from "./context.ts";
import type { SubmitArgs } from "./messages.ts";
import { ops, unguardedOps } from "./mod.ts";

let opId = 0;

function runBatch(runner: BatchRunner, items: [string, unknown][]): WireResult[] {
  const wire: WireOp[] = items.map(([name, args]) => [++opId, name, args, T0]);
  const out = runner.run(wire);
  assert.ok(out.ok, `the batch was given up: ${out.ok ? "" : out.error}`);
  return out.results;
}

function totalChanges(db: DatabaseSync): number {
  return Number((db.prepare("SELECT total_changes() AS n").get() as { n: number }).n);
}

/** What a good submit alone adds to `total_changes()` (its rows, and what its triggers write). */
function goodSubmitChanges(db: DatabaseSync, runner: BatchRunner): number {
  const before = totalChanges(db);
  runBatch(runner, [["message.submit", binaryArgs(`calibrate${opId}`)]]);
  return totalChanges(db) - before;
}

/** Runs `[name, args]` then a good submit in one batch; returns the failure's code. */
function failsAlone(db: DatabaseSync, runner: BatchRunner, name: string, args: unknown): string {
  const goodId = `good${opId}`;
  const expected = goodSubmitChanges(db, runner);
  assert.ok(expected >= 4, "a submit writes the message, its body, its key and its delivery");
  const before = totalChanges(db);
  const [failed, good] = runBatch(runner, [
    [name, args],
    ["message.submit", binaryArgs(goodId)],
  ]);
  assert.equal(failed[1], false, `${name} should have failed`);
  assert.equal(good[1], true, "the good op of the same batch must commit");
  const seq = (good[2] as { seq: number }).seq;
  assert.ok(
    db.prepare("SELECT 1 AS x FROM messages WHERE seq = ? AND id = ?").get(seq, goodId),
  );
  // Exactly the good submit's rows changed.
  assert.equal(totalChanges(db) - before, expected, `${name} left changes behind`);
  return (failed[2] as { code?: string }).code ?? "";
}

Deno.test("the unguarded ops are real ops of the registry", () => {
  for (const name of unguardedOps) assert.ok(Object.hasOwn(ops, name), name);
});

Deno.test("message.submit fails before its first write, for every refusal", () => {
  const db = testDb();
  try {
    addEndpoint(db, "a");
    addEndpoint(db, "b");
    addEndpoint(db, "off", { enabled: false });
    addEndpoint(db, "locked", { talkHash: "argon2-hash", talkVersion: 3 });
    addEndpoint(db, "q");
    addGroup(db, "g1", ["b", "off"]);
    const runner = new BatchRunner(db, ops, unguardedOps);
    const req = (id: string, over: Partial<SubmitArgs> = {}) => binaryArgs(id, over);
    runBatch(runner, [["message.submit", req("dup")]]);
    runBatch(runner, [["message.submit", req("lone")]]);
    db.exec("DELETE FROM send_keys WHERE msg_id = 'lone'");
    const cases: [string, SubmitArgs, string][] = [
      ["same id, other request", req("dup", { fingerprint: new Uint8Array([9]) }), "conflict"],
      ["a record without its key", req("lone"), "conflict"],
      ["unknown endpoint", req("x1", { toId: "nobody" }), "invalid_target"],
      ["disabled endpoint", req("x2", { toId: "off" }), "endpoint_disabled"],
      ["unknown group", req("x3", { toKind: "group", toId: "g0" }), "invalid_target"],
      ["not a member", req("x4", { toKind: "group", toId: "g1" }), "not_member"],
      ["talk password missing", req("x5", { toId: "locked" }), "talk_password_required"],
      [
        "talk password wrong",
        req("x6", { toId: "locked", talk: { verdict: "password_wrong", expectedVersion: 3 } }),
        "talk_password_invalid",
      ],
      [
        "talk password changed meanwhile",
        req("x7", { toId: "locked", talk: { verdict: "password_ok", expectedVersion: 2 } }),
        "talk_password_invalid",
      ],
    ];
    for (const [name, args, code] of cases) {
      assert.equal(failsAlone(db, runner, "message.submit", args), code, name);
    }
  } finally {
    db.close();
  }
});

Deno.test("message.submit over the sender's quota fails before its first write", () => {
  const db = testDb();
  try {
    addEndpoint(db, "a");
    addEndpoint(db, "b");
    addEndpoint(db, "q");
    const runner = new BatchRunner(db, ops, unguardedOps);
    for (const id of ["later1", "later2"]) {
      runBatch(runner, [[
        "message.submit",
        binaryArgs(id, { senderId: "q", sendAt: T0 + 60_000 }),
      ]]);
    }
    // "q" has two unfinished messages; "a" (the good submits) none.
    configure(db, { maxPendingPerSender: 2 }, T0);
    assert.equal(
      failsAlone(db, runner, "message.submit", binaryArgs("x8", { senderId: "q" })),
      "quota_exceeded",
    );
  } finally {
    db.close();
  }
});

Deno.test("delivery.ack fails before its first write; a repeated ack writes nothing", () => {
  const db = testDb();
  try {
    addEndpoint(db, "a");
    addEndpoint(db, "b");
    addEndpoint(db, "c");
    const runner = new BatchRunner(db, ops, unguardedOps);
    runBatch(runner, [["message.submit", binaryArgs("m1")]]);
    assert.equal(
      failsAlone(db, runner, "delivery.ack", { endpointId: "b", from: "a", id: "nope" }),
      "not_found",
    );
    assert.equal(
      failsAlone(db, runner, "delivery.ack", { endpointId: "c", from: "a", id: "m1" }),
      "not_found",
    );
    const [first] = runBatch(runner, [["delivery.ack", { endpointId: "b", from: "a", id: "m1" }]]);
    assert.deepEqual(
      [first[1], (first[2] as { result: string; changed: boolean }).changed],
      [true, true],
    );
    const before = totalChanges(db);
    const [again] = runBatch(runner, [["delivery.ack", { endpointId: "b", from: "a", id: "m1" }]]);
    assert.equal(again[1], true);
    assert.deepEqual(
      { ...(again[2] as { result: string; changed: boolean; receipts: unknown[] }) },
      {
        result: "accepted",
        changed: false,
        receipts: [],
        wasPushedTo: null,
        completed: false,
        claimed: [],
      },
    );
    assert.equal(totalChanges(db), before);
  } finally {
    db.close();
  }
});
