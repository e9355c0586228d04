// The receipt window (spec 6.4: at most `limits.receipt_window` receipts unacknowledged on a
// connection). The pusher reads receipts from the database when it may be behind and otherwise
// pushes the rows the committing op hands it (issue 19 item 2); both paths must keep the window,
// push every receipt exactly once and keep receipt id order.
import assert from "node:assert/strict";
import { type Data, receipts, sendNowFrame, waitMsg, withServer } from "./helpers/messaging.ts";
import type { TestClient } from "./helpers/client.ts";

const WINDOW = 3;

/** The receipt ids `c` has received, in arrival order. */
function receiptIds(c: TestClient): number[] {
  return receipts(c).map((f) => Number(f.receipt_id));
}

/** `from` sends `ids` to `to`, which acks each delivery. */
async function deliverAndAck(from: TestClient, to: TestClient, ids: string[]): Promise<void> {
  for (const id of ids) await from.request(sendNowFrame(id, to.id, `text ${id}`));
  for (const id of ids) {
    await waitMsg(to, id);
    await to.request({ type: "ack", from: from.id, id } satisfies Data);
  }
}

Deno.test("receipts beyond the window wait for receipt_ack, then arrive once each in id order", async () => {
  await withServer({ limits: { receipt_window: WINDOW } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const ids = Array.from({ length: 8 }, (_, i) => `w${i}`);
    await deliverAndAck(a, b, ids);
    await a.until(() => receipts(a).length >= WINDOW, "the first window of receipts");
    // Every ack has committed and its effects were applied before b's ack answers; a request of
    // a's own is answered after anything the pusher published on a's connection before it.
    await a.request({ type: "status", id: "w0" });
    assert.equal(receipts(a).length, WINDOW, "no receipt beyond the window while none is acked");

    for (let acked = 0; acked < ids.length; acked++) {
      const got = receiptIds(a);
      await a.request({ type: "receipt_ack", receipt_id: String(got[acked]) });
      const expected = Math.min(ids.length, acked + 1 + WINDOW);
      await a.until(() => receipts(a).length >= expected, `receipt ${expected}`);
      await a.request({ type: "status", id: "w0" });
      assert.equal(receipts(a).length, expected, "one receipt_ack frees exactly one slot");
    }
    const got = receiptIds(a);
    assert.deepEqual(got, [...got].sort((x, y) => x - y), "receipt id order");
    assert.equal(new Set(got).size, ids.length, "each receipt once");
    assert.deepEqual(new Set(receipts(a).map((f) => f.id)), new Set(ids));

    // Caught up and with room: a new receipt arrives from the committing op, no reconnect.
    await deliverAndAck(a, b, ["late"]);
    await a.waitFrame((f) => f.type === "receipt" && f.id === "late", "receipt of late");
    assert.equal(receipts(a).length, ids.length + 1);
  });
});

Deno.test("unacknowledged receipts are pushed again on the next connection, then new ones follow", async () => {
  await withServer({ limits: { receipt_window: WINDOW } }, async (h) => {
    await h.endpoints("a", "b");
    const a1 = await h.online("a");
    const b = await h.online("b");
    await deliverAndAck(a1, b, ["x1", "x2"]);
    await a1.until(() => receipts(a1).length === 2, "two receipts");
    await a1.request({ type: "receipt_ack", receipt_id: String(receiptIds(a1)[0]) });
    await a1.close();

    const a2 = await h.online("a");
    await a2.waitFrame((f) => f.type === "receipt" && f.id === "x2", "x2 again");
    await deliverAndAck(a2, b, ["x3"]);
    await a2.waitFrame((f) => f.type === "receipt" && f.id === "x3", "x3");
    assert.deepEqual(receipts(a2).map((f) => f.id), ["x2", "x3"]);
  });
});
