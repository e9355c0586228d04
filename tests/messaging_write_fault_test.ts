// Delivery bookkeeping through a transient write failure (spec 7.5, 13 服务器故障): the
// disconnect and ack-timeout commits nobody waits on must still land once writes work again, or
// a dead connection's push marks stay until a restart. The kept message's arrival is counted
// (lost, duplicated, redelivered; tests/helpers/fault_counts.ts) before it is asserted.
import assert from "node:assert/strict";
import { WriteFault } from "./helpers/db_fault.ts";
import type { TestServer } from "./helpers/test_server.ts";
import {
  KEEP,
  msgs,
  receiveAndAck,
  sendNowFrame,
  settlePushed,
  waitReceipt,
  withServer,
} from "./helpers/messaging.ts";

/** Counts failed write batches from now on. */
function failedBatches(t: TestServer): { count: () => number; stop: () => void } {
  let failed = 0;
  const stop = t.server.store.onCommit((info) => {
    if (!info.ok) failed++;
  });
  return { count: () => failed, stop };
}

/** Bounded wait for `cond`, polled every 20 ms. */
async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out: ${what}`);
}

Deno.test("a disconnect whose commit fails is retried: the kept message is pushed again and the one not kept is dropped with a receipt", async () => {
  await withServer({ limits: { grace_seconds: 1 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("k1", "b", "kept", KEEP));
    await a.request(sendNowFrame("n1", "b", "not kept", { offline: { keep: false } }));
    // Not awaited with a timeout: a k1 never pushed is counted below as lost=1 with its id.
    await settlePushed(b, "a", ["k1", "n1"]);

    const failures = failedBatches(h.t);
    const fault = await WriteFault.on(h.t);
    try {
      await b.close(); // never acked: both deliveries stay marked as pushed to this connection
      // The commit of the disconnect fails.
      await until(() => failures.count() >= 1, "the disconnect commit fails");
    } finally {
      await fault.off();
      failures.stop();
    }

    // Once writes work, the marks are cleared: after the grace period the message not kept is
    // dropped and its sender told (spec 7.5 清理循环)...
    const dropped = await waitReceipt(a, "n1", "dropped");
    assert.equal(dropped.state, "dropped");
    assert.equal(dropped.reason, "offline");
    // ...and the kept one is pushed to the next connection.
    const again = await h.online("b");
    const [answer] = await receiveAndAck(again, "a", ["k1"], {
      key: "write-fault/disconnect-commit",
      fault: "a disconnect whose commit fails, retried once writes work",
      crashes: () => 0, // in-process: a crash ends the test
      figures: { failed_batches: failures.count() },
    });
    assert.equal(answer!.ok, true);
    assert.equal(msgs(again, "n1").length, 0);
    assert.equal((await waitReceipt(a, "k1")).state, "accepted");
  });
});

Deno.test("an ack timeout whose commit fails is retried: the message not kept is dropped, revoked and reported", async () => {
  await withServer({ limits: { ack_timeout_seconds: 1 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const failures = failedBatches(h.t);
    await a.request(sendNowFrame("n2", "b", "not kept", { offline: { keep: false } }));
    // Bounded and counted: the drop this test expects needs n2 pushed first (no summary row: its
    // outcome is a drop, not a delivery).
    assert.ok(await settlePushed(b, "a", ["n2"]), "lost=1 (ids n2): never pushed to b");
    const fault = await WriteFault.on(h.t);
    try {
      // b never acks: after a second the commit of the ack timeout fails.
      await until(() => failures.count() >= 1, "the ack timeout commit fails");
    } finally {
      await fault.off();
      failures.stop();
    }
    const receipt = await waitReceipt(a, "n2", "dropped");
    assert.equal(receipt.state, "dropped");
    assert.equal(receipt.reason, "not_acked");
    const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked");
    assert.deepEqual(revoked, { v: 1, type: "revoked", id: "n2", from: "a", reason: "dropped" });
  });
});
