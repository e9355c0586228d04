// Delivery of direct messages over MQTT.js and WebSocket (spec 6.2, 6.3, 7.4, 7.5).
import assert from "node:assert/strict";
import { type Frame, online, type TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";

type Data = Record<string, unknown>;

function sendFrame(id: string, to: string, text: string, extra: Data = {}): Data {
  return {
    type: "send",
    id,
    to: { kind: "endpoint", id: to },
    body: { enc: "utf8", data: text },
    ...extra,
  };
}

function msgs(c: TestClient, id?: string): Frame[] {
  return c.frames.filter((f) => f.type === "msg" && (id === undefined || f.id === id));
}

async function setup(t: TestServer, ids: string[]): Promise<void> {
  for (const id of ids) await t.createEndpoint(id, PW);
}

Deno.test("a message acked once is never delivered again, and a re-push after a reconnect carries the same id", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const first = await online(t.wsUrl, "b", PW);
    open.push(a, first.client);
    const sent = await a.request(sendFrame("m1", "b", "once", { delay_ms: 0 }));
    assert.equal(sent.ok, true, JSON.stringify(sent));
    const pushed = await first.client.waitFrame((f) => f.type === "msg" && f.id === "m1", "m1");
    // The receiver goes away before acking; spec 6.3: the delivery stays pending.
    await first.client.close();

    const b = (await online(t.wsUrl, "b", first.token!)).client;
    open.push(b);
    const repushed = await b.waitFrame((f) => f.type === "msg" && f.id === "m1", "m1 again");
    assert.deepEqual(repushed, pushed, "the re-push is the same frame, so the app can dedup by id");
    const seen = new Set([...msgs(first.client), ...msgs(b)].map((f) => `${f.from}/${f.id}`));
    assert.deepEqual([...seen], ["a/m1"]);

    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "m1" })).data, {
      result: "accepted",
    });
    // A later message proves nothing more of m1 came after the ack.
    await a.request(sendFrame("m2", "b", "after", { delay_ms: 0 }));
    await b.waitFrame((f) => f.type === "msg" && f.id === "m2", "m2");
    await b.request({ type: "ack", from: "a", id: "m2" });
    await a.until(() => a.frames.filter((f) => f.type === "receipt").length === 2, "2 receipts");
    assert.equal(msgs(b, "m1").length, 1);
    assert.equal(msgs(b, "m2").length, 1);
    const receipts = a.frames.filter((f) => f.type === "receipt");
    assert.deepEqual(receipts.map((r) => [r.id, r.state]), [["m1", "accepted"], [
      "m2",
      "accepted",
    ]]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a kept message sent while the receiver is offline arrives when it comes online", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const resp = await a.request(
      sendFrame("k1", "b", "kept", { delay_ms: 0, offline: { keep: true, ttl_seconds: 3600 } }),
    );
    assert.equal((resp.data as Data).state, "dispatched", JSON.stringify(resp));
    const before = await a.request({ type: "status", id: "k1" });
    assert.deepEqual((before.data as Data).items, [{
      endpoint_id: "b",
      state: "pending",
      reason: "",
    }]);

    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    const msg = await b.waitFrame((f) => f.type === "msg" && f.id === "k1", "k1");
    assert.equal((msg.body as Data).data, "kept");
    assert.equal(msg.send_at_ms, (resp.data as Data).send_at_ms);
    await b.request({ type: "ack", from: "a", id: "k1" });
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "k1", "receipt");
    assert.equal(receipt.state, "accepted");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a message delayed 2 s is scheduled and arrives about 2 s after the response", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    const resp = await a.request(sendFrame("d1", "b", "later", { delay_ms: 2000 }));
    const answeredAt = performance.now();
    const data = resp.data as Data;
    assert.equal(data.state, "scheduled");
    assert.ok(Math.abs((data.send_at_ms as number) - (Date.now() + 2000)) < 500);
    let arrivedAt = 0;
    await b.until(() => {
      if (arrivedAt === 0 && msgs(b, "d1").length > 0) arrivedAt = performance.now();
      return arrivedAt > 0;
    }, "delayed msg");
    const waited = arrivedAt - answeredAt;
    assert.ok(waited >= 1900 && waited < 5000, `arrived after ${waited.toFixed(0)} ms`);
    assert.equal(msgs(b, "d1")[0].send_at_ms, data.send_at_ms);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("bodies over 64 KiB go through the big-frame path and all arrive intact", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    const bodies = ["x", "y", "z"].map((c, i) => c.repeat(100 * 1024 + i));
    for (const [i, text] of bodies.entries()) {
      const resp = await a.request(sendFrame(`big${i}`, "b", text, { delay_ms: 0 }));
      assert.equal(resp.ok, true, JSON.stringify(resp.error));
    }
    for (const [i, text] of bodies.entries()) {
      const msg = await b.waitFrame((f) => f.type === "msg" && f.id === `big${i}`, `big${i}`);
      assert.equal((msg.body as Data).data, text);
      await b.request({ type: "ack", from: "a", id: `big${i}` });
    }
    await a.until(() => a.frames.filter((f) => f.type === "receipt").length === 3, "3 receipts");
    assert.ok(a.frames.every((f) => f.type !== "receipt" || f.state === "accepted"));
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a takeover re-pushes the deliveries pushed but not acked on the old connection", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b1 = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b1);
    await a.request(sendFrame("t1", "b", "take me", { delay_ms: 0 }));
    await b1.waitFrame((f) => f.type === "msg" && f.id === "t1", "t1 on the first connection");

    // spec 5: a password login from elsewhere takes the endpoint over (MQTT 5 reason 0x8E).
    const b2 = (await online(t.wsUrl, "b", PW)).client;
    open.push(b2);
    await b1.until(() => b1.closed, "old connection closed");
    assert.equal(b1.disconnectPacket?.reasonCode, 0x8e);
    const msg = await b2.waitFrame((f) => f.type === "msg" && f.id === "t1", "t1 re-pushed");
    assert.equal((msg.body as Data).data, "take me");
    assert.deepEqual((await b2.request({ type: "ack", from: "a", id: "t1" })).data, {
      result: "accepted",
    });
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "t1", "receipt");
    assert.equal(receipt.state, "accepted");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("with record_retention_days 0 a new message that reuses a deleted seq is pushed with its own content", async () => {
  // Completion deletes the record at once; SQLite then hands the same seq to the next message.
  const t = await startTestServer({ record_retention_days: 0 });
  const open: TestClient[] = [];
  try {
    await setup(t, ["a", "b"]);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    await a.request(sendFrame("z1", "b", "first", { delay_ms: 0 }));
    await b.waitFrame((f) => f.type === "msg" && f.id === "z1", "z1");
    await b.request({ type: "ack", from: "a", id: "z1" });
    await a.waitFrame((f) => f.type === "receipt" && f.id === "z1", "z1 receipt");
    assert.equal((await a.request({ type: "status", id: "z1" })).ok, false, "record deleted");

    await a.request(sendFrame("z2", "b", "second", { delay_ms: 0 }));
    await b.until(() => msgs(b).length === 2, "a second msg");
    const second = msgs(b)[1];
    assert.equal(second.id, "z2");
    assert.equal((second.body as Data).data, "second");
    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "z2" })).data, {
      result: "accepted",
    });
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});
