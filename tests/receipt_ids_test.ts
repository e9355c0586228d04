// Receipt ids are never reused (issue 10 item 7, migration 2): a long-lived connection's receipt
// pusher asks for ids above the highest it sent, so a receipt that got the id of a deleted one
// would never reach its sender on that connection.
import assert from "node:assert/strict";
import { receipts, sendNowFrame, waitMsg, waitReceipt, withServer } from "./helpers/messaging.ts";

Deno.test("after housekeeping deletes the newest receipt, the next receipt still reaches the connected sender", async () => {
  await withServer({ receipt_retention_days: 0 }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");

    await a.request(sendNowFrame("r1", "b", "first"));
    await waitMsg(b, "r1");
    await b.request({ type: "ack", from: "a", id: "r1" });
    const first = await waitReceipt(a, "r1");
    await a.request({ type: "receipt_ack", receipt_id: first.receipt_id });

    // receipt_retention_days 0: the hourly cleanup deletes every receipt, the newest included.
    const removed = await h.t.server.messaging.housekeeping();
    assert.equal(removed.receipts, 1);

    await a.request(sendNowFrame("r2", "b", "second"));
    await waitMsg(b, "r2");
    await b.request({ type: "ack", from: "a", id: "r2" });
    const second = await waitReceipt(a, "r2");
    assert.equal(second.state, "accepted");
    assert.notEqual(second.receipt_id, first.receipt_id, "a new receipt gets a new id");
    assert.ok(Number(second.receipt_id) > Number(first.receipt_id));
    assert.equal(receipts(a).length, 2);
  });
});
