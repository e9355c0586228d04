// Size and quota limits over the wire (spec 6.1 max_receive_bytes, 7.3, 7.4, 7.5 step 2, 13).
import assert from "node:assert/strict";
import { online, TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";

type Data = Record<string, unknown>;

function sendFrame(id: string, to: string, text: string, extra: Data = {}): Data {
  return {
    type: "send",
    id,
    to: { kind: "endpoint", id: to },
    body: { enc: "utf8", data: text },
    delay_ms: 0,
    ...extra,
  };
}

const KEEP = { offline: { keep: true, ttl_seconds: 3600 } };

Deno.test("a message larger than the receiver's max_receive_bytes is rejected as too_large, once, and the connection stays up", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = await TestClient.connect(t.wsUrl, "b", PW);
    open.push(a, b);
    await b.handshake(1024);
    await a.request(sendFrame("big", "b", "x".repeat(2048), KEEP));
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "big", "receipt");
    assert.equal(receipt.state, "rejected");
    assert.equal(receipt.reason, "too_large");

    // The connection is still usable: a small message arrives, and it is the only one.
    await a.request(sendFrame("small", "b", "fits", KEEP));
    await b.waitFrame((f) => f.type === "msg" && f.id === "small", "small");
    await b.request({ type: "ack", from: "a", id: "small" });
    await a.waitFrame((f) => f.type === "receipt" && f.id === "small", "small receipt");
    assert.equal(b.connected, true);
    assert.deepEqual(b.frames.filter((f) => f.type === "msg").map((f) => f.id), ["small"]);
    // No re-push loop: the delivery reached its final state, and one receipt was written.
    const status = (await a.request({ type: "status", id: "big" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "rejected", reason: "too_large" }]);
    assert.equal(a.frames.filter((f) => f.type === "receipt" && f.id === "big").length, 1);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a sender with max_pending_per_sender unfinished messages gets quota_exceeded", async () => {
  const t = await startTestServer({ limits: { max_pending_per_sender: 2 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    // b is offline and the messages are kept, so both stay unfinished.
    for (const id of ["q1", "q2"]) {
      assert.equal((await a.request(sendFrame(id, "b", id, KEEP))).ok, true);
    }
    const third = await a.request(sendFrame("q3", "b", "q3", KEEP));
    assert.equal(third.ok, false);
    assert.equal((third.error as Data).code, "quota_exceeded");
    // Finishing one frees a slot.
    await a.request({ type: "recall", id: "q1" });
    assert.equal((await a.request(sendFrame("q3", "b", "q3", KEEP))).ok, true);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a receiver with max_pending_per_receiver queued deliveries gets the next one rejected as queue_full", async () => {
  const t = await startTestServer({ limits: { max_pending_per_receiver: 1 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const first = await a.request(sendFrame("f1", "b", "queued", KEEP));
    assert.equal((first.data as Data).state, "dispatched");
    const second = await a.request(sendFrame("f2", "b", "full", KEEP));
    // spec 7.4: the send succeeds; its delivery is rejected, which completes the message.
    assert.equal(second.ok, true);
    assert.equal((second.data as Data).state, "completed");
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "f2", "receipt");
    assert.equal(receipt.state, "rejected");
    assert.equal(receipt.reason, "queue_full");
    assert.equal(receipt.endpoint_id, "b");

    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    await b.waitFrame((f) => f.type === "msg" && f.id === "f1", "f1");
    await b.request({ type: "ack", from: "a", id: "f1" });
    // The queue has room again.
    await a.request(sendFrame("f3", "b", "room", KEEP));
    await b.waitFrame((f) => f.type === "msg" && f.id === "f3", "f3");
    assert.deepEqual(b.frames.filter((f) => f.type === "msg").map((f) => f.id), ["f1", "f3"]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

/** Which of `b`'s pending deliveries carry a push mark, by message id (spec 7.5 step 3). */
function pushedIds(t: TestServer, endpointId: string): string[] {
  const rows = t.server.app.reader.prepare(
    `SELECT m.id FROM deliveries d JOIN messages m ON m.seq = d.seq
     WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.pushed_conn IS NOT NULL ORDER BY m.id`,
  ).all(endpointId) as { id: string }[];
  return rows.map((r) => r.id);
}

Deno.test("the push window holds back deliveries beyond delivery_window until an ack frees a slot", async () => {
  const t = await startTestServer({ limits: { delivery_window: 2 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    for (const id of ["w1", "w2", "w3"]) await a.request(sendFrame(id, "b", id, KEEP));
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    const got = () => b.frames.filter((f) => f.type === "msg").map((f) => f.id);
    await b.until(() => got().length === 2, "two pushes");
    // spec 6.3: the window is full, so w3 was claimed by nobody.
    assert.deepEqual(got(), ["w1", "w2"]);
    assert.deepEqual(pushedIds(t, "b"), ["w1", "w2"]);
    await b.request({ type: "ack", from: "a", id: "w1" });
    await b.until(() => got().length === 3, "the third push");
    assert.deepEqual(got(), ["w1", "w2", "w3"]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("more big frames than the server-wide big-frame slots all arrive", async () => {
  const t = await startTestServer({ limits: { delivery_window: 100 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    // spec 7.5: at most 64 frames over 64 KiB in flight; 70 must wait for PUBACKs to free slots.
    const n = 70;
    for (let i = 0; i < n; i++) {
      const resp = await a.request(
        sendFrame(`bf${i}`, "b", String(i).padEnd(65 * 1024, "."), KEEP),
      );
      assert.equal(resp.ok, true);
    }
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    await b.until(() => b.frames.filter((f) => f.type === "msg").length === n, "all big frames");
    const bodies = b.frames.filter((f) => f.type === "msg").map((f) => (f.body as Data).data);
    assert.deepEqual(bodies, Array.from({ length: n }, (_, i) => String(i).padEnd(65 * 1024, ".")));
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});
