import assert from "node:assert/strict";
import type { Frame } from "./helpers/client.ts";
import { sendFrame, withServer } from "./helpers/messaging.ts";

Deno.test("a direct message is delivered once, acked, and the sender gets an accepted receipt", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const resp = await a.request(sendFrame("m1", "b", "hello 你好 <&>", { delay_ms: 0 }));
    assert.equal(resp.ok, true, JSON.stringify(resp));
    assert.equal((resp.data as Record<string, unknown>).state, "dispatched");
    const msg = await b.waitFrame((f) => f.type === "msg" && f.id === "m1", "msg m1");
    assert.equal(msg.from, "a");
    assert.deepEqual(msg.to, { kind: "endpoint", id: "b" });
    assert.equal((msg.body as Record<string, unknown>).data, "hello 你好 <&>");
    const ack = await b.request({ type: "ack", from: "a", id: "m1" });
    assert.deepEqual(ack.data, { result: "accepted" });
    const receipt = await a.waitFrame((f) => f.type === "receipt", "receipt");
    assert.equal(receipt.id, "m1");
    assert.equal(receipt.endpoint_id, "b");
    assert.equal(receipt.state, "accepted");
    const rack = await a.request({ type: "receipt_ack", receipt_id: receipt.receipt_id });
    assert.equal(rack.ok, true);
    const status = await a.request({ type: "status", id: "m1" });
    const sd = status.data as Record<string, unknown>;
    assert.equal(sd.state, "completed");
    assert.deepEqual(sd.items, [{ endpoint_id: "b", state: "accepted", reason: "" }]);
    assert.equal(b.frames.filter((f: Frame) => f.type === "msg").length, 1);
    const again = await a.request(sendFrame("m1", "b", "hello 你好 <&>", { delay_ms: 0 }));
    assert.equal((again.data as Record<string, unknown>).state, "completed");
    const conflict = await a.request(sendFrame("m1", "b", "other", { delay_ms: 0 }));
    assert.equal((conflict.error as Record<string, unknown>).code, "conflict");
  });
});
