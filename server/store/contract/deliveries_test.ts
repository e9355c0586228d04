import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import {
  type ContractStore,
  contractTest,
  countRows,
  deliveryLines,
  messageLine,
  quota,
  receiptLines,
  T0,
} from "./_stores.ts";

// One delivery's life after dispatch (spec 7.5, 7.6): claims and compare-and-set on its state.

async function twoEndpoints(s: ContractStore): Promise<void> {
  await s.addEndpoint("a");
  await s.addEndpoint("b");
  await s.run("context.connected", { endpointId: "b", connCode: "c1" });
}

contractTest("claim marks unpushed pending deliveries oldest first, up to the limit", async (s) => {
  await twoEndpoints(s);
  const seqs: number[] = [];
  for (const [id, at] of [["x", T0 + 30], ["y", T0 + 10], ["z", T0 + 20]] as const) {
    seqs.push((await s.run("message.submit", binaryArgs(id, { sendAt: at }), at)).seq!);
  }
  const first = await s.run(
    "delivery.claim",
    { endpointId: "b", connCode: "c1", limit: 2 },
    T0 + 50,
  );
  assert.deepEqual(first.claimed.map((c) => c.msgId), ["y", "z"]);
  assert.deepEqual(first.claimed[0], {
    seq: seqs[1],
    msgId: "y",
    senderId: "a",
    keep: false,
    expireAt: null,
    sendAt: T0 + 10,
  });
  const rest = await s.run(
    "delivery.claim",
    { endpointId: "b", connCode: "c1", limit: 5 },
    T0 + 50,
  );
  assert.deepEqual(rest.claimed.map((c) => c.msgId), ["x"]);
  const none = await s.run(
    "delivery.claim",
    { endpointId: "b", connCode: "c2", limit: 5 },
    T0 + 50,
  );
  assert.deepEqual(none.claimed, []);
  const attempts = await s.rows<{ attempts: number; pushed_conn: string }>(
    "SELECT attempts, pushed_conn FROM deliveries ORDER BY seq",
  );
  assert.deepEqual(attempts, seqs.map(() => ({ attempts: 1, pushed_conn: "c1" })));
});

contractTest("unmark clears a push mark only while it is still this connection's", async (s) => {
  await twoEndpoints(s);
  const m = await s.run("message.submit", binaryArgs("u"));
  await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 });
  const ref = { seq: m.seq!, endpointId: "b" };
  assert.deepEqual(await s.run("delivery.unmark", { ...ref, connCode: "other" }), {
    cleared: false,
  });
  assert.deepEqual(await s.run("delivery.unmark", { ...ref, connCode: "c1" }), { cleared: true });
  assert.deepEqual(await s.run("delivery.unmark", { ...ref, connCode: "c1" }), { cleared: false });
});

contractTest("ack accepts once; a repeat answers accepted without a new receipt", async (s) => {
  await twoEndpoints(s);
  const m = await s.run("message.submit", binaryArgs("k"));
  await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 });
  const ack = { endpointId: "b", from: "a", id: "k" };
  const first = await s.run("delivery.ack", ack, T0 + 5);
  assert.equal(first.result, "accepted");
  assert.equal(first.changed, true);
  assert.equal(first.wasPushedTo, "c1");
  assert.equal(first.completed, true);
  assert.deepEqual(first.receipts.map((r) => `${r.endpointId}:${r.state}`), ["b:accepted"]);
  const again = await s.run("delivery.ack", ack, T0 + 6);
  assert.deepEqual(again, {
    result: "accepted",
    changed: false,
    receipts: [],
    wasPushedTo: null,
    completed: false,
    claimed: [],
  });
  assert.equal(await messageLine(s, m.seq!), "completed:");
  assert.deepEqual(await receiptLines(s), ["a>k:b:accepted:"]);
  assert.equal(await quota(s, "receiver", "b"), 0);
});

contractTest("ack after recall answers the final state; unknown ids are not_found", async (s) => {
  await twoEndpoints(s);
  await s.run("message.submit", binaryArgs("r"));
  await s.run("message.recall", { senderId: "a", id: "r" });
  const r = await s.run("delivery.ack", { endpointId: "b", from: "a", id: "r" });
  assert.equal(r.result, "recalled");
  assert.equal(r.changed, false);
  assert.equal(
    await s.codeOf("delivery.ack", { endpointId: "b", from: "a", id: "nope" }),
    "not_found",
  );
  assert.equal(
    await s.codeOf("delivery.ack", { endpointId: "a", from: "a", id: "r" }),
    "not_found",
  );
});

contractTest("an ack with a lent claim marks the next deliveries in order", async (s) => {
  await twoEndpoints(s);
  for (const id of ["p", "q", "r"]) await s.run("message.submit", binaryArgs(id));
  await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 1 });
  const r = await s.run("delivery.ack", {
    endpointId: "b",
    from: "a",
    id: "p",
    claim: { connCode: "c1", limit: 1 },
  });
  assert.equal(r.result, "accepted");
  assert.deepEqual(r.claimed.map((c) => c.msgId), ["q"]);
});

const TIMEOUTS = [
  { name: "not kept", keep: false, at: T0 + 1000, want: "dropped", line: "b:dropped:not_acked" },
  {
    name: "kept, past its TTL",
    keep: true,
    at: T0 + 61_000,
    want: "expired",
    line: "b:expired:ttl",
  },
  { name: "kept, within its TTL", keep: true, at: T0 + 1000, want: "repush", line: "b:pending:" },
] as const;

for (const c of TIMEOUTS) {
  contractTest(`an ack timeout: ${c.name} -> ${c.want}`, async (s) => {
    await twoEndpoints(s);
    const m = await s.run("message.submit", binaryArgs("t", { keep: c.keep }));
    await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 });
    const ref = { seq: m.seq!, endpointId: "b" };
    assert.equal(
      (await s.run("delivery.ack_timeout", { ...ref, connCode: "old" }, c.at)).outcome,
      "none",
    );
    const r = await s.run("delivery.ack_timeout", { ...ref, connCode: "c1" }, c.at);
    assert.equal(r.outcome, c.want);
    assert.deepEqual(await deliveryLines(s, m.seq!), [c.line]);
  });
}

contractTest("a frame too large rejects the delivery with a receipt", async (s) => {
  await twoEndpoints(s);
  const m = await s.run("message.submit", binaryArgs("big"));
  const r = await s.run("delivery.reject_too_large", {
    seq: m.seq!,
    endpointId: "b",
    connCode: "c1",
  });
  assert.equal(r.rejected, true);
  assert.deepEqual(r.receipts.map((x) => `${x.state}:${x.reason}`), ["rejected:too_large"]);
  assert.equal(await messageLine(s, m.seq!), "completed:");
  const again = await s.run("delivery.reject_too_large", {
    seq: m.seq!,
    endpointId: "b",
    connCode: "c1",
  });
  assert.equal(again.rejected, false);
});

contractTest("expiry ends unpushed deliveries past expire_at, within its limit", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { offlineSince: T0 - 1000 });
  await s.run("message.submit", binaryArgs("e1", { keep: true, ttlSeconds: 10 }));
  await s.run("message.submit", binaryArgs("e2", { keep: false }));
  await s.run("message.submit", binaryArgs("e3", { keep: true, ttlSeconds: 3600 }));
  const one = await s.run("delivery.expire", { limit: 1 }, T0 + 120_000);
  assert.equal(one.changed, 1);
  const rest = await s.run("delivery.expire", { limit: 10 }, T0 + 120_000);
  assert.equal(rest.changed, 1);
  assert.deepEqual(
    [...one.receipts, ...rest.receipts].map((r) => `${r.msgId}:${r.state}:${r.reason}`).sort(),
    ["e1:expired:ttl", "e2:dropped:offline"],
  );
  assert.equal(await quota(s, "receiver", "b"), 1);
});

contractTest(
  "acks of a group message in one turn: the last completes it and drops it",
  async (s) => {
    for (const id of ["a", "b", "c"]) await s.addEndpoint(id);
    await s.addGroup("g", ["a", "b", "c"]);
    for (const id of ["b", "c"]) await s.run("context.connected", { endpointId: id, connCode: id });
    await s.run("context.configure", { recordRetentionDays: 0 });
    const m = await s.run("message.submit", binaryArgs("m", { toKind: "group", toId: "g" }));
    assert.equal(m.state, "dispatched");
    const [b, c] = await Promise.all(
      ["b", "c"].map((id) => s.run("delivery.ack", { endpointId: id, from: "a", id: "m" }, T0 + 5)),
    );
    assert.deepEqual([b.completed, c.completed], [false, true]);
    assert.deepEqual(
      [...b.receipts, ...c.receipts].map((r) => `${r.endpointId}:${r.state}:${r.atMs}`),
      ["b:accepted:" + (T0 + 5), "c:accepted:" + (T0 + 5)],
    );
    assert.ok(c.receipts[0].receiptId > b.receipts[0].receiptId);
    assert.deepEqual(await receiptLines(s), ["a>m:b:accepted:", "a>m:c:accepted:"]);
    for (const table of ["messages", "message_bodies", "deliveries"]) {
      assert.equal(await countRows(s, table), 0, table);
    }
    assert.equal(await quota(s, "sender", "a"), 0);
  },
);
