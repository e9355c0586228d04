import assert from "node:assert/strict";
import type { HousekeepingCursor, HousekeepingResult } from "../ops/housekeeping.ts";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, countRows, T0 } from "./_stores.ts";

// The hourly cleanup (spec 7.6) on both stores.

const DAY = 86_400_000;
const RETENTION = {
  recordRetentionMs: 7 * DAY,
  receiptRetentionMs: 7 * DAY,
  idempotencyMs: DAY,
};

contractTest(
  "housekeeping deletes old completed records, receipts and keys, in batches",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b", { offlineSince: null });
    // Three old messages (completed at once: b is offline), one young one.
    for (const id of ["o1", "o2", "o3"]) await s.run("message.submit", binaryArgs(id), T0);
    await s.run("message.submit", binaryArgs("young", { sendAt: T0 + 8 * DAY }), T0 + 8 * DAY);
    const now = T0 + 8 * DAY;
    let cursor: HousekeepingCursor | null = null;
    const totals = { messages: 0, receipts: 0, keys: 0, calls: 0 };
    for (let more = true; more;) {
      const r: HousekeepingResult = await s.run(
        "housekeeping.run",
        { ...RETENTION, batch: 2, cursor },
        now,
      );
      totals.messages += r.deletedMessages;
      totals.receipts += r.deletedReceipts;
      totals.keys += r.deletedKeys;
      totals.calls++;
      ({ more, cursor } = r);
      assert.ok(totals.calls < 10, "housekeeping ends");
    }
    assert.deepEqual({ ...totals, calls: totals.calls > 1 }, {
      messages: 3,
      receipts: 3,
      keys: 3,
      calls: true,
    });
    assert.deepEqual(
      (await s.rows<{ id: string }>("SELECT id FROM messages")).map((r) => r.id),
      ["young"],
    );
    assert.equal(await countRows(s, "send_keys"), 1);
    assert.equal(await countRows(s, "deliveries"), 1);
    assert.equal(await countRows(s, "message_bodies"), 0);
  },
);

contractTest("housekeeping keeps a key while its record exists or it is young", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b");
  await s.run("context.connected", { endpointId: "b" });
  await s.run("message.submit", binaryArgs("open"), T0); // stays dispatched: its record lives
  const r = await s.run("housekeeping.run", { ...RETENTION, batch: 100 }, T0 + 2 * DAY);
  assert.deepEqual([r.deletedMessages, r.deletedKeys, r.more], [0, 0, false]);
  assert.equal(await countRows(s, "send_keys"), 1);
});
