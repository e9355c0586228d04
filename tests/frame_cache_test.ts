// The encoded `msg` frames kept for pushing (spec 7.5) are dropped when the last delivery of their
// message ends, so memory does not grow with completed messages.
import assert from "node:assert/strict";
import {
  type Data,
  KEEP,
  sendNowFrame,
  waitMsg,
  waitReceipt,
  withServer,
} from "./helpers/messaging.ts";

const BIG = "x".repeat(32 * 1024);

Deno.test("a direct message's frame is dropped once it is acked, or once its ack times out", async () => {
  await withServer({ limits: { ack_timeout_seconds: 1 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const messaging = h.t.server.messaging;
    for (let i = 0; i < 20; i++) {
      await a.request(sendNowFrame(`d${i}`, "b", BIG, KEEP));
      await waitMsg(b, `d${i}`);
      assert.ok(messaging.frameCacheBytes > BIG.length, "the pushed frame is cached");
      await b.request({ type: "ack", from: "a", id: `d${i}` });
      assert.equal(messaging.frameCacheBytes, 0, `d${i}: acked, so its frame is gone`);
    }
    // Not kept and never acked: dropped by the ack timeout, which also ends the frame.
    await a.request(sendNowFrame("n1", "b", BIG, { offline: { keep: false } }));
    await waitMsg(b, "n1");
    assert.ok(messaging.frameCacheBytes > 0);
    await waitReceipt(a, "n1", "dropped");
    assert.equal(messaging.frameCacheBytes, 0);
  });
});

Deno.test("a group message's frame stays until its last member acks", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b", "c");
    const a = await h.online("a");
    const b = await h.online("b");
    const c = await h.online("c");
    const created = await a.request({
      type: "group.create",
      id: "g1",
      name: "g",
      members: [{ id: "b" }, { id: "c" }],
    });
    assert.equal(created.ok, true, JSON.stringify(created));
    const messaging = h.t.server.messaging;
    await a.request({
      type: "send",
      id: "g-1",
      to: { kind: "group", id: "g1" },
      body: { enc: "utf8", data: BIG },
      delay_ms: 0,
      ...KEEP,
    });
    await waitMsg(b, "g-1");
    await waitMsg(c, "g-1");
    await b.request({ type: "ack", from: "a", id: "g-1" });
    assert.ok(messaging.frameCacheBytes > BIG.length, "c has not acked yet");
    const r = await c.request({ type: "ack", from: "a", id: "g-1" });
    assert.equal((r.data as Data).result, "accepted");
    assert.equal(messaging.frameCacheBytes, 0);
  });
});

Deno.test("a pushed frame whose delivery expires after a disconnect is dropped by the cleanup loop's receipt", async () => {
  await withServer({ limits: { grace_seconds: 0 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const messaging = h.t.server.messaging;
    await a.request(sendNowFrame("t1", "b", BIG, { offline: { keep: true, ttl_seconds: 1 } }));
    await waitMsg(b, "t1");
    assert.ok(messaging.frameCacheBytes > 0);
    await b.close(); // pushed, never acked; the disconnect clears the mark
    const receipt = await waitReceipt(a, "t1", "expired");
    assert.equal(receipt.state, "expired");
    assert.equal(messaging.frameCacheBytes, 0);
  });
});
