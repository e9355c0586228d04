// Recall over the wire (spec 6.4, 7.6 撤回).
import assert from "node:assert/strict";
import {
  type Data,
  msgIds,
  receipts,
  sendFrame,
  sendNowFrame,
  waitMsg,
  withServer,
} from "./helpers/messaging.ts";

Deno.test("a recall before the due time answers recalled and the receiver never sees the message", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    // A short delay keeps the test quick; the recall still lands long before the due time.
    const sent = await a.request(sendFrame("r1", "b", "never", { delay_ms: 3000 }));
    const sd1 = sent.data as Data;
    assert.equal(sd1.state, "scheduled");
    const recall = await a.request({ type: "recall", id: "r1" });
    // spec 6.4: nothing dispatched yet -> recalled with all counts 0.
    assert.deepEqual(recall.data, { result: "recalled", recalled: 0, accepted: 0, other: 0 });

    // r2 is due just after r1; the scheduler dispatches in send_at order (spec 7.4), so had r1
    // survived the recall it would reach b before r2.
    const r2At = (sd1.send_at_ms as number) + 100;
    await a.request(sendFrame("r2", "b", "instead", { send_at_ms: r2At }));
    await waitMsg(b, "r2");
    assert.deepEqual(msgIds(b), ["r2"]);

    const status = await a.request({ type: "status", id: "r1" });
    const sd = status.data as Data;
    assert.equal(sd.state, "completed");
    assert.equal(sd.reason, "recalled");
    assert.deepEqual(sd.items, []);
    // A second recall reports the same outcome.
    assert.equal(((await a.request({ type: "recall", id: "r1" })).data as Data).result, "recalled");
  });
});

Deno.test("a recall after the push revokes the message and a later ack answers recalled", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("p1", "b", "oops"));
    await waitMsg(b, "p1");

    const recall = await a.request({ type: "recall", id: "p1" });
    assert.deepEqual(recall.data, { result: "recalled", recalled: 1, accepted: 0, other: 0 });
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "p1", from: "a", reason: "recalled" });
    // spec 6.3: an ack after the recall succeeds and reports the final state.
    const ack = await b.request({ type: "ack", from: "a", id: "p1" });
    assert.equal(ack.ok, true);
    assert.deepEqual(ack.data, { result: "recalled" });

    const status = await a.request({ type: "status", id: "p1" });
    const sd = status.data as Data;
    assert.equal(sd.state, "completed");
    assert.deepEqual(sd.items, [{ endpoint_id: "b", state: "recalled", reason: "" }]);
    // spec 7.6: a recall writes no receipt. The first receipt the sender gets is m2's.
    await a.request(sendNowFrame("p2", "b", "fine"));
    await waitMsg(b, "p2");
    await b.request({ type: "ack", from: "a", id: "p2" });
    await a.waitFrame((f) => f.type === "receipt", "receipt");
    assert.deepEqual(receipts(a).map((f) => f.id), ["p2"]);
  });
});

Deno.test("a recall after the ack fails and reports the accepted delivery", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("q1", "b", "done"));
    await waitMsg(b, "q1");
    await b.request({ type: "ack", from: "a", id: "q1" });
    const recall = await a.request({ type: "recall", id: "q1" });
    assert.deepEqual(recall.data, { result: "failed", recalled: 0, accepted: 1, other: 0 });
    const unknown = await a.request({ type: "recall", id: "nope" });
    assert.equal((unknown.error as Data).code, "not_found");
  });
});
