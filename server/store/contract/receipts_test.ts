import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, countRows } from "./_stores.ts";

// Receipts (spec 6.4): ids that grow, acks by their owner only.

contractTest("receipt ids grow and receipt.ack accepts only the owner's, repeatably", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { offlineSince: null });
  const ids: number[] = [];
  for (const id of ["r1", "r2", "r3"]) {
    const r = await s.run("message.submit", binaryArgs(id));
    ids.push(r.receipts[0].receiptId);
  }
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2], `ids ${ids}`);
  assert.deepEqual(await s.run("receipt.ack", { senderId: "a", receiptId: ids[0] }), { ok: true });
  assert.deepEqual(await s.run("receipt.ack", { senderId: "a", receiptId: ids[0] }), { ok: true });
  assert.deepEqual(await s.run("receipt.ack", { senderId: "b", receiptId: ids[1] }), { ok: false });
  assert.deepEqual(await s.run("receipt.ack", { senderId: "a", receiptId: 999_999 }), {
    ok: false,
  });
  assert.equal(await countRows(s, "receipts", "acked = 1"), 1);
});

contractTest("no receipt is written for a message that asked for none", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { offlineSince: null });
  const r = await s.run("message.submit", binaryArgs("quiet", { receipt: false }));
  assert.equal(r.state, "completed");
  assert.deepEqual(r.receipts, []);
  assert.equal(await countRows(s, "receipts"), 0);
});
