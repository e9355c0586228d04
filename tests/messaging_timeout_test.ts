// Time-driven outcomes over the wire: retention expiry, the grace period and the ack timeout
// (spec 7.1, 7.4, 7.5). Every wait is bounded and ends on an event, never a fixed sleep.
import assert from "node:assert/strict";
import type { TestServer } from "./helpers/test_server.ts";
import {
  type Data,
  KEEP,
  msgIds,
  msgs,
  sendNowFrame,
  waitMsg,
  waitReceipt,
  withServer,
} from "./helpers/messaging.ts";

/** Bounded poll until the server has committed `id`'s disconnect (spec 7.5: offline_since). */
async function offlineCommitted(t: TestServer, id: string): Promise<void> {
  const q = "SELECT offline_since AS at FROM endpoints WHERE id = ?";
  for (const end = Date.now() + 5000; Date.now() < end;) {
    if ((await t.db.get(q, id))?.at !== null) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${id} never went offline`);
}

const ACK_TIMEOUT_1S = { limits: { ack_timeout_seconds: 1 } };
const GRACE_2S = { limits: { grace_seconds: 2 } };

Deno.test("a kept message whose TTL runs out before the receiver comes online is expired, not delivered", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const resp = await a.request(
      sendNowFrame("e1", "b", "too late", { offline: { keep: true, ttl_seconds: 1 } }),
    );
    assert.equal((resp.data as Data).state, "dispatched");
    // The cleanup loop (about every second) expires it: wait for the receipt, not a clock.
    const receipt = await waitReceipt(a, "e1", "expired");
    assert.equal(receipt.state, "expired");
    assert.equal(receipt.reason, "ttl");
    assert.equal(receipt.endpoint_id, "b");

    const b = await h.online("b");
    await a.request(sendNowFrame("e2", "b", "in time", KEEP));
    await waitMsg(b, "e2");
    assert.deepEqual(msgIds(b), ["e2"]);
    const status = (await a.request({ type: "status", id: "e1" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "expired", reason: "ttl" }]);
  });
});

Deno.test("a kept message whose ack is lost is pushed again with the same id and a late ack is accepted", async () => {
  await withServer(ACK_TIMEOUT_1S, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("l1", "b", "ack me", KEEP));
    const pushes = () => msgs(b, "l1");
    // No ack: after ack_timeout_seconds the kept delivery is re-pushed (spec 7.5 step 5).
    await b.until(() => pushes().length >= 2, "the re-push");
    const [first, second] = pushes();
    assert.deepEqual(second, first);
    assert.equal(b.frames.some((f) => f.type === "revoked"), false);

    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "l1" })).data, {
      result: "accepted",
    });
    const receipt = await waitReceipt(a, "l1");
    assert.equal(receipt.state, "accepted");
    const status = (await a.request({ type: "status", id: "l1" })).data as Data;
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "accepted", reason: "" }]);
  });
});

Deno.test("a message not kept whose ack times out is dropped as not_acked and revoked on the receiver", async () => {
  await withServer(ACK_TIMEOUT_1S, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("n1", "b", "quick", { offline: { keep: false } }));
    await waitMsg(b, "n1");
    const receipt = await waitReceipt(a, "n1", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "not_acked");
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "n1", from: "a", reason: "dropped" });
    // spec 6.3: a late ack succeeds and reports the final state.
    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "n1" })).data, {
      result: "dropped",
    });
    assert.equal(msgs(b).length, 1);
    const status = (await a.request({ type: "status", id: "n1" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "dropped", reason: "not_acked" }]);
  });
});

Deno.test("a kept message whose ack times out after its TTL is expired and revoked", async () => {
  await withServer(ACK_TIMEOUT_1S, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("x1", "b", "short", { offline: { keep: true, ttl_seconds: 1 } }));
    await waitMsg(b, "x1");
    // spec 7.5 step 5: kept and past expire_at at the ack timeout -> expired, revoked.
    const receipt = await waitReceipt(a, "x1", "expired");
    assert.equal(receipt.state, "expired");
    assert.equal(receipt.reason, "ttl");
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "x1", from: "a", reason: "expired" });
    assert.equal(msgs(b).length, 1);
  });
});

Deno.test("a message not kept, sent within the grace period, arrives when the receiver reconnects", async () => {
  await withServer(GRACE_2S, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const first = await h.session("b");
    await first.client.close();
    await offlineCommitted(h.t, "b");
    const resp = await a.request(sendNowFrame("g1", "b", "grace"));
    assert.equal((resp.data as Data).state, "dispatched", JSON.stringify(resp));

    const b = await h.online("b", first.token!);
    await waitMsg(b, "g1");
    await b.request({ type: "ack", from: "a", id: "g1" });
    const receipt = await waitReceipt(a, "g1");
    assert.equal(receipt.state, "accepted");
  });
});

Deno.test("a message not kept is dropped as offline once the grace period passes without a reconnect", async () => {
  await withServer(GRACE_2S, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await b.close();
    await offlineCommitted(h.t, "b");
    const resp = await a.request(sendNowFrame("g2", "b", "gone"));
    assert.equal((resp.data as Data).state, "dispatched");
    const receipt = await waitReceipt(a, "g2", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "offline");
  });
});

Deno.test("a message not kept to an endpoint that was never online is dropped as offline at once", async () => {
  await withServer(GRACE_2S, async (h) => {
    await h.endpoints("a", "c");
    const a = await h.online("a");
    const resp = await a.request(sendNowFrame("g3", "c", "nobody"));
    // spec 7.4: never online counts as past the grace period -> dropped in the submit itself.
    assert.equal((resp.data as Data).state, "completed");
    const receipt = await waitReceipt(a, "g3", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "offline");
    const status = (await a.request({ type: "status", id: "g3" })).data as Data;
    assert.deepEqual(status.items, [{ endpoint_id: "c", state: "dropped", reason: "offline" }]);
  });
});
