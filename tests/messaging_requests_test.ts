// Idempotent sends, status lookups and refused sends over the wire (spec 6.2, 6.4, 6.10, 7.3).
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";

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

function code(resp: Data): unknown {
  return (resp.error as Data | undefined)?.code;
}

Deno.test("a resent send gets the first send_at_ms and the current state; other content under the id is a conflict", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const frame = sendFrame("i1", "b", "same", { delay_ms: 10_000 });
    const first = (await a.request(frame)).data as Data;
    assert.equal(first.state, "scheduled");
    // spec 7.3 step 2: the retry is answered from the first submission, not recomputed from now.
    const again = await a.request(frame);
    assert.deepEqual(again.data, first);

    await a.request({ type: "recall", id: "i1" });
    const afterRecall = await a.request(frame);
    assert.deepEqual(afterRecall.data, { ...first, state: "completed" });

    const other = await a.request(sendFrame("i1", "b", "different", { delay_ms: 10_000 }));
    assert.equal(code(other), "conflict");
    const otherDelay = await a.request(sendFrame("i1", "b", "same", { delay_ms: 20_000 }));
    assert.equal(code(otherDelay), "conflict");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("status answers not_found for an unknown id and for another endpoint's message", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    await t.createEndpoint("c", PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const c = (await online(t.wsUrl, "c", PW)).client;
    open.push(a, c);
    assert.equal(code(await a.request({ type: "status", id: "nothing" })), "not_found");
    await a.request(sendFrame("s1", "b", "mine", { delay_ms: 10_000 }));
    const own = await a.request({ type: "status", id: "s1" });
    assert.equal((own.data as Data).state, "scheduled");
    // spec 6.4: only the sender may look a message up.
    assert.equal(code(await c.request({ type: "status", id: "s1" })), "not_found");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("refused sends get their error codes and leave nothing behind", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    await t.createEndpoint("off", PW, { enabled: false });
    const a = (await online(t.wsUrl, "a", PW)).client;
    open.push(a);
    const cases: [Data, string][] = [
      [sendFrame("x1", "ghost", "hi"), "invalid_target"],
      [sendFrame("x2", "off", "hi"), "endpoint_disabled"],
      [sendFrame("x3", "b", "x".repeat(262_145)), "body_too_large"],
      [sendFrame("x4", "b", "hi", { delay_ms: 0, send_at_ms: Date.now() }), "bad_request"],
    ];
    for (const [frame, expected] of cases) {
      const resp = await a.request(frame);
      assert.equal(resp.ok, false, `${frame.id} should fail`);
      assert.equal(code(resp), expected, `${frame.id}: ${JSON.stringify(resp.error)}`);
    }
    for (const [frame] of cases) {
      assert.equal(code(await a.request({ type: "status", id: frame.id })), "not_found");
    }
    // No idempotency key was written: the id is still free for a valid request.
    const ok = await a.request(sendFrame("x1", "b", "hi", { delay_ms: 10_000 }));
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});

Deno.test("a receipt not confirmed with receipt_ack is sent again on the next connection, a confirmed one is not", async () => {
  const t = await startTestServer();
  const open: TestClient[] = [];
  try {
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a1 = await online(t.wsUrl, "a", PW);
    const b = (await online(t.wsUrl, "b", PW)).client;
    open.push(b);
    for (const id of ["c1", "c2"]) {
      await a1.client.request(sendFrame(id, "b", id, { delay_ms: 0 }));
      await b.waitFrame((f) => f.type === "msg" && f.id === id, id);
      await b.request({ type: "ack", from: "a", id });
    }
    await a1.client.until(
      () => a1.client.frames.filter((f) => f.type === "receipt").length === 2,
      "2 receipts",
    );
    const [r1, r2] = a1.client.frames.filter((f) => f.type === "receipt");
    assert.equal(
      (await a1.client.request({ type: "receipt_ack", receipt_id: r1.receipt_id })).ok,
      true,
    );
    await a1.client.close();

    // spec 6.4: receipts may repeat until confirmed; the SDK dedups by receipt_id.
    const a2 = (await online(t.wsUrl, "a", a1.token!)).client;
    open.push(a2);
    const again = await a2.waitFrame((f) => f.type === "receipt", "re-sent receipt");
    assert.deepEqual(again, r2);
    await a2.request({ type: "receipt_ack", receipt_id: r2.receipt_id });
    await a2.request(sendFrame("c3", "b", "c3", { delay_ms: 0 }));
    await b.waitFrame((f) => f.type === "msg" && f.id === "c3", "c3");
    await b.request({ type: "ack", from: "a", id: "c3" });
    await a2.until(() => a2.frames.filter((f) => f.type === "receipt").length === 2, "c3 receipt");
    assert.deepEqual(a2.frames.filter((f) => f.type === "receipt").map((f) => f.id), ["c2", "c3"]);
    const unknown = await a2.request({ type: "receipt_ack", receipt_id: "999999" });
    assert.equal(code(unknown), "not_found");
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
});
