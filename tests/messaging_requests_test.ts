// Idempotent sends, status lookups and refused sends over the wire (spec 6.2, 6.4, 6.10, 7.3).
import assert from "node:assert/strict";
import {
  type Data,
  PW,
  receipts,
  sendFrame,
  sendNowFrame,
  waitMsg,
  withServer,
} from "./helpers/messaging.ts";

function code(resp: Data): unknown {
  return (resp.error as Data | undefined)?.code;
}

Deno.test("a resent send gets the first send_at_ms and the current state; other content under the id is a conflict", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
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
  });
});

Deno.test("status answers not_found for an unknown id and for another endpoint's message", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b", "c");
    const a = await h.online("a");
    const c = await h.online("c");
    assert.equal(code(await a.request({ type: "status", id: "nothing" })), "not_found");
    await a.request(sendFrame("s1", "b", "mine", { delay_ms: 10_000 }));
    const own = await a.request({ type: "status", id: "s1" });
    assert.equal((own.data as Data).state, "scheduled");
    // spec 6.4: only the sender may look a message up.
    assert.equal(code(await c.request({ type: "status", id: "s1" })), "not_found");
  });
});

Deno.test("refused sends get their error codes and leave nothing behind", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    await h.t.createEndpoint("off", PW, { enabled: false });
    const a = await h.online("a");
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
  });
});

Deno.test("a receipt not confirmed with receipt_ack is sent again on the next connection, a confirmed one is not", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a1 = await h.session("a");
    const b = await h.online("b");
    for (const id of ["c1", "c2"]) {
      await a1.client.request(sendNowFrame(id, "b", id));
      await waitMsg(b, id);
      await b.request({ type: "ack", from: "a", id });
    }
    await a1.client.until(() => receipts(a1.client).length === 2, "2 receipts");
    const [r1, r2] = receipts(a1.client);
    assert.equal(
      (await a1.client.request({ type: "receipt_ack", receipt_id: r1.receipt_id })).ok,
      true,
    );
    await a1.client.close();

    // spec 6.4: receipts may repeat until confirmed; the SDK dedups by receipt_id.
    const a2 = await h.online("a", a1.token!);
    const again = await a2.waitFrame((f) => f.type === "receipt", "re-sent receipt");
    assert.deepEqual(again, r2);
    await a2.request({ type: "receipt_ack", receipt_id: r2.receipt_id });
    await a2.request(sendNowFrame("c3", "b", "c3"));
    await waitMsg(b, "c3");
    await b.request({ type: "ack", from: "a", id: "c3" });
    await a2.until(() => receipts(a2).length === 2, "c3 receipt");
    assert.deepEqual(receipts(a2).map((f) => f.id), ["c2", "c3"]);
    const unknown = await a2.request({ type: "receipt_ack", receipt_id: "999999" });
    assert.equal(code(unknown), "not_found");
  });
});
