// Time-driven outcomes over the wire: retention expiry, the grace period and the ack timeout
// (spec 7.1, 7.4, 7.5). Every wait is bounded and ends on an event, never a fixed sleep.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
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

/** Bounded poll until the server has committed `id`'s disconnect (spec 7.5: offline_since). */
async function offlineCommitted(t: TestServer, id: string): Promise<void> {
  const q = t.server.app.reader.prepare("SELECT offline_since AS at FROM endpoints WHERE id = ?");
  for (const end = Date.now() + 5000; Date.now() < end;) {
    if ((q.get(id) as { at: number | null }).at !== null) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${id} never went offline`);
}

const KEEP = { offline: { keep: true, ttl_seconds: 3600 } };

Deno.test("a kept message whose TTL runs out before the receiver comes online is expired, not delivered", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const resp = await a.request(
      sendFrame("e1", "b", "too late", { offline: { keep: true, ttl_seconds: 1 } }),
    );
    assert.equal((resp.data as Data).state, "dispatched");
    // The cleanup loop (about every second) expires it: wait for the receipt, not a clock.
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "e1", "expired");
    assert.equal(receipt.state, "expired");
    assert.equal(receipt.reason, "ttl");
    assert.equal(receipt.endpoint_id, "b");

    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    await a.request(sendFrame("e2", "b", "in time", KEEP));
    await b.waitFrame((f) => f.type === "msg" && f.id === "e2", "e2");
    assert.deepEqual(b.frames.filter((f) => f.type === "msg").map((f) => f.id), ["e2"]);
    const status = (await a.request({ type: "status", id: "e1" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "expired", reason: "ttl" }]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a kept message whose ack is lost is pushed again with the same id and a late ack is accepted", async () => {
  const t = await startTestServer({ limits: { ack_timeout_seconds: 1 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    await a.request(sendFrame("l1", "b", "ack me", KEEP));
    const pushes = () => b.frames.filter((f) => f.type === "msg" && f.id === "l1");
    // No ack: after ack_timeout_seconds the kept delivery is re-pushed (spec 7.5 step 5).
    await b.until(() => pushes().length >= 2, "the re-push");
    const [first, second] = pushes();
    assert.deepEqual(second, first);
    assert.equal(b.frames.some((f) => f.type === "revoked"), false);

    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "l1" })).data, {
      result: "accepted",
    });
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "l1", "receipt");
    assert.equal(receipt.state, "accepted");
    const status = (await a.request({ type: "status", id: "l1" })).data as Data;
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "accepted", reason: "" }]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a message not kept whose ack times out is dropped as not_acked and revoked on the receiver", async () => {
  const t = await startTestServer({ limits: { ack_timeout_seconds: 1 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    await a.request(sendFrame("n1", "b", "quick", { offline: { keep: false } }));
    await b.waitFrame((f) => f.type === "msg" && f.id === "n1", "n1");
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "n1", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "not_acked");
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "n1", from: "a", reason: "dropped" });
    // spec 6.3: a late ack succeeds and reports the final state.
    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "n1" })).data, {
      result: "dropped",
    });
    assert.equal(b.frames.filter((f) => f.type === "msg").length, 1);
    const status = (await a.request({ type: "status", id: "n1" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "dropped", reason: "not_acked" }]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a kept message whose ack times out after its TTL is expired and revoked", async () => {
  const t = await startTestServer({ limits: { ack_timeout_seconds: 1 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(a, b);
    await a.request(sendFrame("x1", "b", "short", { offline: { keep: true, ttl_seconds: 1 } }));
    await b.waitFrame((f) => f.type === "msg" && f.id === "x1", "x1");
    // spec 7.5 step 5: kept and past expire_at at the ack timeout -> expired, revoked.
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "x1", "expired");
    assert.equal(receipt.state, "expired");
    assert.equal(receipt.reason, "ttl");
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "x1", from: "a", reason: "expired" });
    assert.equal(b.frames.filter((f) => f.type === "msg").length, 1);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a message not kept, sent within the grace period, arrives when the receiver reconnects", async () => {
  const t = await startTestServer({ limits: { grace_seconds: 2 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const first = await online(t.wsUrl, "b", PW);
    open.push(a);
    await first.client.close();
    await offlineCommitted(t, "b");
    const resp = await a.request(sendFrame("g1", "b", "grace"));
    assert.equal((resp.data as Data).state, "dispatched", JSON.stringify(resp));

    const b = (await online(t.wsUrl, "b", first.token!)).client;
    open.push(b);
    await b.waitFrame((f) => f.type === "msg" && f.id === "g1", "g1");
    await b.request({ type: "ack", from: "a", id: "g1" });
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "g1", "receipt");
    assert.equal(receipt.state, "accepted");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a message not kept is dropped as offline once the grace period passes without a reconnect", async () => {
  const t = await startTestServer({ limits: { grace_seconds: 2 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const b = (await online(t.wsUrl, "b", PW)).client;
    await b.close();
    await offlineCommitted(t, "b");
    const resp = await a.request(sendFrame("g2", "b", "gone"));
    assert.equal((resp.data as Data).state, "dispatched");
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "g2", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "offline");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a message not kept to an endpoint that was never online is dropped as offline at once", async () => {
  const t = await startTestServer({ limits: { grace_seconds: 2 } });
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("c", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const resp = await a.request(sendFrame("g3", "c", "nobody"));
    // spec 7.4: never online counts as past the grace period -> dropped in the submit itself.
    assert.equal((resp.data as Data).state, "completed");
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "g3", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "offline");
    const status = (await a.request({ type: "status", id: "g3" })).data as Data;
    assert.deepEqual(status.items, [{ endpoint_id: "c", state: "dropped", reason: "offline" }]);
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});
