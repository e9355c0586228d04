import assert from "node:assert/strict";
import { test } from "node:test";
import { NixMsgError } from "../../src/errors.ts";
import { frameFor, SendQueue } from "../../src/send_queue.ts";
import { code } from "../helpers/src_errors.ts";

let rid = 0;
const nextRid = () => `r${++rid}`;

function frame(i: number) {
  return { id: `m${i}`, to: { kind: "endpoint", id: "b" }, body: { enc: "utf8", data: `#${i}` } };
}

function withoutRid(json: Record<string, unknown>) {
  const { rid: _rid, ...rest } = json;
  return JSON.stringify(rest);
}

test("a reconnect replays in-flight sends in order with the same id and content (spec 9)", () => {
  const q = new SendQueue({ maxInFlight: 2 });
  for (let i = 1; i <= 3; i++) void q.add(frame(i)).catch(() => {});
  const first = [q.take(0, nextRid)!, q.take(0, nextRid)!];
  assert.equal(q.take(0, nextRid), undefined, "at most maxInFlight in flight");
  assert.equal(q.inFlight, 2);
  const sent = first.map((t) => frameFor(t.rid, t.frame));

  q.requeueInFlight(); // connection lost: no resp will come
  assert.equal(q.inFlight, 0);
  assert.equal(q.size, 3, "nothing is lost");
  const again = [q.take(0, nextRid)!, q.take(0, nextRid)!];
  const resent = again.map((t) => frameFor(t.rid, t.frame));
  assert.deepEqual(resent.map(withoutRid), sent.map(withoutRid), "same ids, same content");
  assert.notEqual(resent[0]!.rid, sent[0]!.rid, "a new rid on the new connection");
  assert.deepEqual(again.map((t) => t.frame.id), ["m1", "m2"]);
});

test("the queue holds 1,000 sends including those in flight, then refuses with queue_full", async () => {
  const q = new SendQueue();
  for (let i = 0; i < 1000; i++) void q.add(frame(i)).catch(() => {});
  for (let i = 0; i < 100; i++) assert.ok(q.take(0, nextRid));
  assert.equal(q.take(0, nextRid), undefined, "100 in flight at most");
  await assert.rejects(q.add(frame(1000)), code("queue_full"));
});

test("a resp settles its send; an error resp rejects it with the server code", async () => {
  const q = new SendQueue();
  const ok = q.add(frame(1));
  const bad = q.add(frame(2));
  const a = q.take(0, nextRid)!;
  const b = q.take(0, nextRid)!;
  q.settle(a.rid, { ok: true, data: { id: "m1", send_at_ms: 5, state: "dispatched" } }, 0);
  q.settle(b.rid, { ok: false, error: new NixMsgError("invalid_target") }, 0);
  assert.deepEqual(await ok, { id: "m1", sendAtMs: 5, state: "dispatched" });
  await assert.rejects(bad, code("invalid_target"));
  assert.equal(q.size, 0);
});

test("rate_limited on a send is retried after a backoff delay, not failed (spec 9)", async () => {
  const q = new SendQueue({ random: () => 0.5 });
  const p = q.add(frame(1));
  const t1 = q.take(1000, nextRid)!;
  assert.equal(
    q.settle(t1.rid, { ok: false, error: new NixMsgError("rate_limited") }, 1000),
    "retry",
  );
  assert.equal(q.take(1000, nextRid), undefined, "not due yet");
  assert.equal(q.nextDueAt(1000), 2000, "1 s later");
  const t2 = q.take(2000, nextRid)!;
  assert.equal(t2.frame, t1.frame, "the same content");
  assert.equal(
    q.settle(t2.rid, { ok: false, error: new NixMsgError("rate_limited") }, 2000),
    "retry",
  );
  assert.equal(q.nextDueAt(2000), 4000, "then 2 s");
  const t3 = q.take(4000, nextRid)!;
  q.settle(t3.rid, { ok: true, data: { id: "m1", send_at_ms: 1, state: "dispatched" } }, 4000);
  assert.equal((await p).id, "m1");
});

test("closing the queue fails every held send with the stop error, and later sends too", async () => {
  const q = new SendQueue();
  const a = q.add(frame(1));
  const b = q.add(frame(2));
  q.take(0, nextRid);
  const err = new NixMsgError("kicked", "taken over", { reason: "taken_over" });
  q.close(err);
  await assert.rejects(a, (e) => e === err);
  await assert.rejects(b, (e) => e === err);
  await assert.rejects(q.add(frame(3)), (e) => e === err);
  assert.equal(q.size, 0);
});
