import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { type ContractStore, contractTest, countRows, T0 } from "./_stores.ts";

// Webhooks (issue 34): the webhook row, and the durable outbox of its events (`hook_due`).

const LEASE = 20_000;
const GRACE = 60_000;

/** a sends to b; b has an enabled webhook and no MQTT connection. */
async function hooked(s: ContractStore, sender = false): Promise<void> {
  await s.run("context.configure", { graceMs: GRACE });
  await s.addEndpoint("a", { offlineSince: null });
  await s.addEndpoint("b", { offlineSince: null });
  await s.run("webhook.put", { endpointId: "b", url: "http://h/b", enabled: true, secret: "s1" });
  if (sender) {
    await s.run("webhook.put", { endpointId: "a", url: "http://h/a", enabled: true, secret: "s2" });
  }
}

async function delivery(s: ContractStore, seq: number) {
  const rows = await s.rows<{
    state: string;
    reason: string;
    pushed_conn: string | null;
    hook_due: number | null;
    expire_at: number | null;
    attempts: number;
  }>(
    "SELECT state, reason, pushed_conn, hook_due, expire_at, attempts FROM deliveries " +
      "WHERE seq = ? AND endpoint_id = 'b'",
    seq,
  );
  return rows[0];
}

contractTest(
  "webhook.put needs the endpoint, keeps the secret unless given, delete removes it",
  async (s) => {
    await s.addEndpoint("b");
    assert.equal(
      await s.codeOf("webhook.put", {
        endpointId: "zz",
        url: "http://h",
        enabled: true,
        secret: "x",
      }),
      "not_found",
    );
    assert.deepEqual(
      await s.run("webhook.put", {
        endpointId: "b",
        url: "http://h/1",
        enabled: true,
        secret: "s1",
      }),
      { created: true },
    );
    assert.deepEqual(
      await s.run("webhook.put", { endpointId: "b", url: "http://h/2", enabled: false }, T0 + 5),
      { created: false },
    );
    const row = await s.query("webhook.get", { endpointId: "b" });
    assert.deepEqual(row, {
      endpointId: "b",
      url: "http://h/2",
      secret: "s1",
      enabled: false,
      createdAt: T0,
      updatedAt: T0 + 5,
    });
    assert.deepEqual(await s.run("webhook.delete", { endpointId: "b" }), { deleted: true });
    assert.deepEqual(await s.run("webhook.delete", { endpointId: "b" }), { deleted: false });
    assert.equal(await s.query("webhook.get", { endpointId: "b" }), null);
  },
);

contractTest(
  "a message not kept waits for an enabled webhook instead of being dropped offline",
  async (s) => {
    await hooked(s);
    const r = await s.run("message.submit", binaryArgs("m1"));
    assert.equal(r.state, "dispatched");
    const d = await delivery(s, r.seq!);
    assert.equal(d.state, "pending");
    assert.equal(d.expire_at, null);
    // Without the webhook it would have been dropped at once (never online).
    await s.run("webhook.put", { endpointId: "b", url: "http://h/b", enabled: false });
    const r2 = await s.run("message.submit", binaryArgs("m2"));
    assert.equal((await delivery(s, r2.seq!)).state, "dropped");
  },
);

contractTest("claim leases msg events, retry backs off and starts the grace period", async (s) => {
  await hooked(s);
  const seq = (await s.run("message.submit", binaryArgs("m1"))).seq!;
  assert.deepEqual(await s.query("webhook.due", { now: T0 }), ["b"]);
  const c = await s.run("webhook.claim", { endpointId: "b", limit: 4, leaseMs: LEASE }, T0 + 1);
  assert.deepEqual(c.msgs, [{ seq, msgId: "m1", senderId: "a", sendAt: T0, attempts: 1 }]);
  assert.deepEqual(c.receipts, []);
  assert.deepEqual(c.revoked, []);
  assert.equal((await delivery(s, seq)).pushed_conn, "webhook");
  // In flight: neither the webhook (within the lease) nor an MQTT push loop takes it again.
  const again = await s.run("webhook.claim", { endpointId: "b", limit: 4, leaseMs: LEASE }, T0 + 2);
  assert.deepEqual(again.msgs, []);
  await s.run("context.connected", { endpointId: "b", connCode: "c1" });
  const mqtt = await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 }, T0 + 2);
  assert.deepEqual(mqtt.claimed, []);
  await s.run("context.disconnected", { endpointId: "b", connCode: "c1" });
  assert.deepEqual(await s.query("webhook.due", { now: T0 + 2 }), []);
  // A failed POST: due again later, and the grace period of a message not kept starts now.
  assert.deepEqual(
    await s.run(
      "webhook.retry",
      { endpointId: "b", kind: "msg", key: seq, dueAt: T0 + 1000 },
      T0 + 3,
    ),
    { changed: true },
  );
  const d = await delivery(s, seq);
  assert.equal(d.pushed_conn, null);
  assert.equal(d.hook_due, T0 + 1000);
  assert.equal(d.expire_at, T0 + 3 + GRACE);
  const early = await s.run(
    "webhook.claim",
    { endpointId: "b", limit: 4, leaseMs: LEASE },
    T0 + 999,
  );
  assert.deepEqual(early.msgs, []);
  const late = await s.run(
    "webhook.claim",
    { endpointId: "b", limit: 4, leaseMs: LEASE },
    T0 + 1000,
  );
  assert.equal(late.msgs[0].attempts, 2);
  // A lease that ran out (the node died mid-request) is taken again.
  const stolen = await s.run(
    "webhook.claim",
    { endpointId: "b", limit: 4, leaseMs: LEASE },
    T0 + 1000 + LEASE,
  );
  assert.equal(stolen.msgs[0].attempts, 3);
  // The grace period ends: the cleanup loop drops it once it is no longer in flight.
  await s.run(
    "webhook.retry",
    { endpointId: "b", kind: "msg", key: seq, dueAt: T0 + 99_000 },
    T0 + 1001 + LEASE,
  );
  await s.run("delivery.expire", { limit: 10 }, T0 + 3 + GRACE);
  const end = await delivery(s, seq);
  assert.equal(`${end.state}:${end.reason}`, "dropped:offline");
});

contractTest(
  "a 2xx acks through delivery.ack and the sender's webhook gets the receipt",
  async (s) => {
    await hooked(s, true);
    const seq = (await s.run("message.submit", binaryArgs("m1"))).seq!;
    await s.run("webhook.claim", { endpointId: "b", limit: 4, leaseMs: LEASE }, T0 + 1);
    const ack = await s.run("delivery.ack", { endpointId: "b", from: "a", id: "m1" }, T0 + 2);
    assert.equal(ack.result, "accepted");
    assert.equal(ack.wasPushedTo, "webhook");
    assert.equal((await delivery(s, seq)).state, "accepted");
    const c = await s.run("webhook.claim", { endpointId: "a", limit: 4, leaseMs: LEASE }, T0 + 3);
    assert.equal(c.receipts.length, 1);
    assert.deepEqual(c.receipts[0], { ...ack.receipts[0] });
    // Accepted: nothing owed to b any more.
    const b = await s.run(
      "webhook.claim",
      { endpointId: "b", limit: 4, leaseMs: LEASE },
      T0 + LEASE * 2,
    );
    assert.deepEqual(b, { msgs: [], receipts: [], revoked: [] });
    // Failed receipt POST: due again later; receipt_ack (the 2xx) ends it.
    const rid = c.receipts[0].receiptId;
    await s.run(
      "webhook.retry",
      { endpointId: "a", kind: "receipt", key: rid, dueAt: T0 + 500 },
      T0 + 4,
    );
    assert.deepEqual(await s.query("webhook.backlog", {}), { msgs: 0, receipts: 1 });
    const r2 = await s.run(
      "webhook.claim",
      { endpointId: "a", limit: 4, leaseMs: LEASE },
      T0 + 500,
    );
    assert.deepEqual(r2.receipts.map((r) => r.receiptId), [rid]);
    assert.deepEqual(await s.run("receipt.ack", { senderId: "a", receiptId: rid }), { ok: true });
    const none = await s.run(
      "webhook.claim",
      { endpointId: "a", limit: 4, leaseMs: LEASE },
      T0 + LEASE * 3,
    );
    assert.deepEqual(none.receipts, []);
  },
);

contractTest("a delivery recalled after a POST owes one revoked event, best effort", async (s) => {
  await hooked(s);
  const seq = (await s.run("message.submit", binaryArgs("m1"))).seq!;
  await s.run("webhook.claim", { endpointId: "b", limit: 4, leaseMs: LEASE }, T0 + 1);
  const recall = await s.run("message.recall", { senderId: "a", id: "m1" }, T0 + 2);
  assert.equal(recall.result, "recalled");
  // The POST in flight fails afterwards: the mark is no longer the webhook's to release.
  assert.deepEqual(
    await s.run("webhook.retry", { endpointId: "b", kind: "msg", key: seq, dueAt: T0 + 3 }, T0 + 3),
    { changed: false },
  );
  const c = await s.run(
    "webhook.claim",
    { endpointId: "b", limit: 4, leaseMs: LEASE },
    T0 + 1 + LEASE,
  );
  assert.deepEqual(c.revoked, [{ seq, msgId: "m1", senderId: "a", reason: "recalled" }]);
  assert.deepEqual(c.msgs, []);
  assert.deepEqual(
    await s.run("webhook.retry", { endpointId: "b", kind: "revoked", key: seq, dueAt: null }),
    { changed: true },
  );
  const after = await s.run(
    "webhook.claim",
    { endpointId: "b", limit: 4, leaseMs: LEASE },
    T0 + 9 * LEASE,
  );
  assert.deepEqual(after.revoked, []);
  assert.equal(await countRows(s, "deliveries", "hook_due IS NOT NULL"), 0);
});

contractTest(
  "disabling a webhook releases its in-flight marks to the MQTT push loop",
  async (s) => {
    await hooked(s);
    const seq = (await s.run("message.submit", binaryArgs("m1", { keep: true, ttlSeconds: 600 })))
      .seq!;
    await s.run("webhook.claim", { endpointId: "b", limit: 4, leaseMs: LEASE }, T0 + 1);
    await s.run("webhook.put", { endpointId: "b", url: "http://h/b", enabled: false }, T0 + 2);
    assert.equal((await delivery(s, seq)).pushed_conn, null);
    assert.deepEqual(await s.query("webhook.due", { now: T0 + 2 * LEASE }), []);
    await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    const mqtt = await s.run(
      "delivery.claim",
      { endpointId: "b", connCode: "c1", limit: 5 },
      T0 + 3,
    );
    assert.deepEqual(mqtt.claimed.map((c) => c.seq), [seq]);
  },
);

contractTest(
  "removing or disabling the only way to an endpoint starts the grace period of what it waits for",
  async (s) => {
    await hooked(s);
    const seq = (await s.run("message.submit", binaryArgs("m1"))).seq!;
    assert.equal((await delivery(s, seq)).expire_at, null);
    await s.run("webhook.put", { endpointId: "b", url: "http://h/b", enabled: false }, T0 + 10);
    assert.equal((await delivery(s, seq)).expire_at, T0 + 10 + GRACE);
    // While an MQTT connection remains, removing the webhook changes nothing.
    await s.run("webhook.put", { endpointId: "b", url: "http://h/b", enabled: true }, T0 + 20);
    const seq2 = (await s.run("message.submit", binaryArgs("m2"), T0 + 20)).seq!;
    await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    await s.run("webhook.delete", { endpointId: "b" }, T0 + 30);
    assert.equal((await delivery(s, seq2)).expire_at, null);
  },
);

contractTest("webhook.load makes the enabled webhooks count as connections", async (s) => {
  await s.run("context.configure", { graceMs: GRACE });
  await s.addEndpoint("a", { offlineSince: null });
  await s.addEndpoint("b", { offlineSince: null });
  await s.exec(
    "INSERT INTO webhooks (endpoint_id, url, secret, enabled, created_at, updated_at) " +
      "VALUES ('b', 'http://h', 's', 1, 0, 0)",
  );
  assert.deepEqual(await s.run("webhook.load", {}), { enabled: ["b"] });
  const r = await s.run("message.submit", binaryArgs("m1"));
  assert.equal((await delivery(s, r.seq!)).state, "pending");
  await s.exec("UPDATE webhooks SET enabled = 0");
  assert.deepEqual(await s.run("webhook.load", {}), { enabled: [] });
  const r2 = await s.run("message.submit", binaryArgs("m2"));
  assert.equal((await delivery(s, r2.seq!)).state, "dropped");
});
