import assert from "node:assert/strict";
import type { SubmitArgs } from "../ops/messages.ts";
import { PLACEMENT_CASES, TARGET_CASES } from "../ops/_message_cases.ts";
import {
  contractTest,
  countRows,
  deliveryLines,
  messageLine,
  quota,
  receiptLines,
  T0,
} from "./_stores.ts";

// message.submit / dispatch_due / recall (spec 7.3, 7.4, 6.4) on both stores.

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

for (const c of PLACEMENT_CASES) {
  contractTest(`submit places a delivery: ${c.name}`, async (s) => {
    await s.addEndpoint("a", { offlineSince: null });
    await s.addEndpoint("b", { offlineSince: c.offlineSince ?? null });
    if (c.connected) await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    const r = await s.run("message.submit", req({ keep: c.keep }));
    assert.equal(r.state, c.want.msg);
    assert.equal(r.duplicate, false);
    const d = (await s.rows<{ state: string; reason: string; expire_at: number | null }>(
      "SELECT state, reason, expire_at FROM deliveries WHERE seq = ? AND endpoint_id = 'b'",
      r.seq,
    ))[0];
    assert.deepEqual(
      { state: d.state, reason: d.reason, expireAt: d.expire_at },
      { state: c.want.state, reason: c.want.reason, expireAt: c.want.expireAt },
    );
    assert.deepEqual(r.wake, c.want.state === "pending" ? ["b"] : []);
    assert.deepEqual(r.receipts.map((x) => `${x.endpointId}:${x.state}:${x.reason}`), c.receipts);
    assert.equal(
      await countRows(s, "message_bodies", "seq = ?", r.seq),
      c.want.msg === "completed" ? 0 : 1,
    );
  });
}

contractTest("submit refuses bad targets and leaves nothing behind", async (s) => {
  for (const id of ["a", "b", "c"]) await s.addEndpoint(id);
  await s.addEndpoint("off", { enabled: false });
  await s.addGroup("g1", ["b", "c"]);
  for (const [name, over, code] of TARGET_CASES) {
    assert.equal(await s.codeOf("message.submit", req(over)), code, name);
  }
  assert.equal(await countRows(s, "send_keys"), 0);
  assert.equal(await countRows(s, "messages"), 0);
});

contractTest(
  "a repeated submit returns the first answer; another request under its id conflicts",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b");
    await s.run("context.connected", { endpointId: "b" });
    const first = await s.run("message.submit", req({ id: "dup" }));
    const again = await s.run("message.submit", req({ id: "dup" }), T0 + 5);
    assert.equal(first.duplicate, false);
    assert.deepEqual(
      { seq: again.seq, sendAt: again.sendAt, state: again.state, duplicate: again.duplicate },
      { seq: first.seq, sendAt: first.sendAt, state: first.state, duplicate: true },
    );
    assert.deepEqual(again.wake, []);
    assert.equal(
      await s.codeOf("message.submit", req({ id: "dup", fingerprint: new Uint8Array([9]) })),
      "conflict",
    );
    assert.equal(await countRows(s, "messages"), 1);
    assert.equal(await countRows(s, "deliveries"), 1);
  },
);

contractTest("a repeat after the record is gone answers completed from the key", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { offlineSince: null });
  await s.run("context.configure", { recordRetentionDays: 0 });
  const first = await s.run("message.submit", req({ id: "gone" }));
  assert.equal(first.state, "completed");
  assert.equal(await countRows(s, "messages"), 0);
  const again = await s.run("message.submit", req({ id: "gone" }), T0 + 9);
  assert.deepEqual(
    { seq: again.seq, state: again.state, duplicate: again.duplicate, sendAt: again.sendAt },
    { seq: undefined, state: "completed", duplicate: true, sendAt: T0 },
  );
});

contractTest("seq grows with every message and is never handed out again", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { offlineSince: null });
  // Records deleted as they complete: an id reused after delete would show here.
  await s.run("context.configure", { recordRetentionDays: 0 });
  const seqs: number[] = [];
  for (let i = 0; i < 5; i++) seqs.push((await s.run("message.submit", req())).seq!);
  assert.equal(await countRows(s, "messages"), 0);
  await s.run("context.configure", { recordRetentionDays: 7 });
  seqs.push((await s.run("message.submit", req())).seq!);
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1], `seqs ${seqs}`);
});

contractTest("the sender quota counts unfinished messages and 0 means unlimited", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b");
  await s.run("context.configure", { maxPendingPerSender: 2 });
  const later = { sendAt: T0 + 60_000 };
  await s.run("message.submit", req(later));
  await s.run("message.submit", req(later));
  assert.equal(await quota(s, "sender", "a"), 2);
  assert.equal(await s.codeOf("message.submit", req(later)), "quota_exceeded");
  const r = await s.run("message.recall", { senderId: "a", id: `m${counter - 2}` });
  assert.equal(r.result, "recalled");
  assert.equal(await quota(s, "sender", "a"), 1);
  assert.equal(await s.codeOf("message.submit", req(later)), "ok");
  await s.run("context.configure", { maxPendingPerSender: 0 });
  assert.equal(await s.codeOf("message.submit", req(later)), "ok");
  assert.equal(await quota(s, "sender", "a"), 3);
});

contractTest("a limit changed after a submit in the same turn does not apply to it", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b");
  await s.run("context.configure", { maxPendingPerSender: 1 });
  const later = { sendAt: T0 + 60_000 };
  await s.run("message.submit", req(later));
  // Queued together: the submit runs first, under the limit of 1, whatever the store does.
  const [refused, raised] = await Promise.allSettled([
    s.codeOf("message.submit", req(later)),
    s.run("context.configure", { maxPendingPerSender: 0 }),
  ]);
  assert.deepEqual(refused, { status: "fulfilled", value: "quota_exceeded" });
  assert.equal(raised.status, "fulfilled");
  assert.equal(await quota(s, "sender", "a"), 1);
  assert.equal(await s.codeOf("message.submit", req(later)), "ok");
});

contractTest("a full receiver queue rejects the delivery with queue_full", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b");
  await s.run("context.connected", { endpointId: "b" });
  await s.run("context.configure", { maxPendingPerReceiver: 1 });
  const ok = await s.run("message.submit", req());
  assert.deepEqual(ok.wake, ["b"]);
  assert.equal(await quota(s, "receiver", "b"), 1);
  const full = await s.run("message.submit", req());
  assert.equal(full.state, "completed");
  assert.deepEqual(await deliveryLines(s, full.seq!), ["b:rejected:queue_full"]);
  assert.deepEqual(full.receipts.map((r) => `${r.endpointId}:${r.state}:${r.reason}`), [
    "b:rejected:queue_full",
  ]);
});

contractTest(
  "dispatch_due dispatches due messages in send_at order and reports the next",
  async (s) => {
    for (const id of ["a", "b", "c"]) await s.addEndpoint(id);
    await s.addGroup("g", ["a", "b", "c"]);
    for (const id of ["b", "c"]) await s.run("context.connected", { endpointId: id });
    const late = await s.run("message.submit", req({ sendAt: T0 + 2000 }));
    const early = await s.run(
      "message.submit",
      req({ toKind: "group", toId: "g", sendAt: T0 + 1000 }),
    );
    const later = await s.run("message.submit", req({ sendAt: T0 + 9000 }));
    assert.deepEqual([late.state, early.state, later.state], [
      "scheduled",
      "scheduled",
      "scheduled",
    ]);
    const r = await s.run("message.dispatch_due", { limit: 10 }, T0 + 2500);
    assert.equal(r.dispatched, 2);
    assert.deepEqual(r.wake.sort(), ["b", "c"]);
    assert.deepEqual(r.failed, []);
    assert.equal(r.nextDueAt, T0 + 9000);
    assert.deepEqual(await deliveryLines(s, early.seq!), ["b:pending:", "c:pending:"]);
    assert.equal(await messageLine(s, later.seq!), "scheduled:");
    const skipped = await s.run(
      "message.dispatch_due",
      { limit: 10, skip: [later.seq!] },
      T0 + 9999,
    );
    assert.deepEqual([skipped.dispatched, skipped.nextDueAt], [0, null]);
  },
);

contractTest(
  "a group message dispatched after its sender left completes with a receipt",
  async (s) => {
    for (const id of ["a", "b"]) await s.addEndpoint(id);
    await s.addGroup("g", ["b", "a"]);
    const m = await s.run("message.submit", req({ toKind: "group", toId: "g", sendAt: T0 + 10 }));
    await s.run("group.leave", { callerId: "a", groupId: "g" });
    const r = await s.run("message.dispatch_due", {}, T0 + 10);
    assert.equal(r.dispatched, 1);
    assert.equal(await messageLine(s, m.seq!), "completed:sender_left");
    assert.deepEqual(await receiptLines(s), [`a>m${counter}::rejected:sender_left`]);
  },
);

contractTest(
  "recall ends pending deliveries, lists pushed ones as revoked and repeats alike",
  async (s) => {
    for (const id of ["a", "b", "c"]) await s.addEndpoint(id);
    await s.addGroup("g", ["a", "b", "c"]);
    for (const id of ["b", "c"]) await s.run("context.connected", { endpointId: id });
    const m = await s.run("message.submit", req({ id: "r1", toKind: "group", toId: "g" }));
    await s.run("delivery.claim", { endpointId: "b", connCode: "cb", limit: 10 });
    await s.run("delivery.ack", { endpointId: "c", from: "a", id: "r1" });
    const r = await s.run("message.recall", { senderId: "a", id: "r1" });
    assert.deepEqual(r, {
      result: "partial",
      recalled: 1,
      accepted: 1,
      other: 0,
      revoked: [{ endpointId: "b", connCode: "cb" }],
    });
    assert.equal(await messageLine(s, m.seq!), "completed:");
    const again = await s.run("message.recall", { senderId: "a", id: "r1" });
    assert.deepEqual({ ...again, revoked: [] }, { ...r, revoked: [] });
    assert.equal(await s.codeOf("message.recall", { senderId: "a", id: "nope" }), "not_found");
    const sched = await s.run("message.submit", req({ id: "r2", sendAt: T0 + 5000 }));
    assert.equal((await s.run("message.recall", { senderId: "a", id: "r2" })).result, "recalled");
    assert.equal(await messageLine(s, sched.seq!), "completed:recalled");
  },
);

contractTest(
  "a submit with a lent claim marks its online receiver's deliveries in the same op",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b");
    await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    const pushedTo = async (seq: number | undefined) =>
      (await s.rows<{ pushed_conn: string | null }>(
        "SELECT pushed_conn FROM deliveries WHERE seq = ? AND endpoint_id = 'b'",
        seq,
      ))[0].pushed_conn;
    // An older pending delivery, left unclaimed: the claim takes it first, then the new one.
    const older = await s.run("message.submit", req(), T0);
    assert.deepEqual(older.wake, ["b"]);
    assert.equal(older.claimed, undefined, "no claim without a lent ticket");
    const r = await s.run("message.submit", req({ claim: { connCode: "c1", limit: 8 } }), T0 + 1);
    assert.equal(r.state, "dispatched");
    assert.deepEqual(r.claimed?.map((c) => c.seq), [older.seq, r.seq]);
    assert.deepEqual(r.wake, [], "the lent loop pushes them: no wake");
    assert.equal(await pushedTo(older.seq), "c1");
    assert.equal(await pushedTo(r.seq), "c1");
    // The window's room bounds the claim; what is left stays unmarked for the loop's next claim.
    const a1 = await s.run("message.submit", req(), T0 + 2);
    const a2 = await s.run("message.submit", req({ claim: { connCode: "c1", limit: 1 } }), T0 + 3);
    assert.deepEqual(a2.claimed?.map((c) => c.seq), [a1.seq]);
    assert.equal(await pushedTo(a2.seq), null);
    // A scheduled message claims nothing new; a repeat of an id claims what is pending.
    const later = await s.run(
      "message.submit",
      req({ sendAt: T0 + 60_000, claim: { connCode: "c1", limit: 8 } }),
      T0 + 4,
    );
    assert.equal(later.state, "scheduled");
    assert.deepEqual(later.claimed?.map((c) => c.seq), [a2.seq]);
    // A refusal is thrown before any write: nothing is claimed (unguarded op, batch.ts).
    const refused = req({ toId: "nobody", claim: { connCode: "c1", limit: 8 } });
    assert.equal(await s.codeOf("message.submit", refused, T0 + 5), "invalid_target");
  },
);
