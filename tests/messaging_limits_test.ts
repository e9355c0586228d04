// Size and quota limits over the wire (spec 6.1 max_receive_bytes, 7.3, 7.4, 7.5 step 2, 13).
import assert from "node:assert/strict";
import { TestClient } from "./helpers/client.ts";
import type { TestServer } from "./helpers/test_server.ts";
import {
  type Data,
  KEEP,
  msgIds,
  msgs,
  PW,
  sendNowFrame,
  waitMsg,
  waitReceipt,
  withServer,
} from "./helpers/messaging.ts";

Deno.test("a message larger than the receiver's max_receive_bytes is rejected as too_large, once, and the connection stays up", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await TestClient.connect(h.t.wsUrl, "b", PW);
    h.track(b);
    await b.handshake(1024);
    await a.request(sendNowFrame("big", "b", "x".repeat(2048), KEEP));
    const receipt = await waitReceipt(a, "big");
    assert.equal(receipt.state, "rejected");
    assert.equal(receipt.reason, "too_large");

    // The connection is still usable: a small message arrives, and it is the only one.
    await a.request(sendNowFrame("small", "b", "fits", KEEP));
    await waitMsg(b, "small");
    await b.request({ type: "ack", from: "a", id: "small" });
    await waitReceipt(a, "small", "small receipt");
    assert.equal(b.connected, true);
    assert.deepEqual(msgIds(b), ["small"]);
    // No re-push loop: the delivery reached its final state, and one receipt was written.
    const status = (await a.request({ type: "status", id: "big" })).data as Data;
    assert.equal(status.state, "completed");
    assert.deepEqual(status.items, [{ endpoint_id: "b", state: "rejected", reason: "too_large" }]);
    assert.equal(a.frames.filter((f) => f.type === "receipt" && f.id === "big").length, 1);
  });
});

Deno.test("a sender with max_pending_per_sender unfinished messages gets quota_exceeded", async () => {
  await withServer({ limits: { max_pending_per_sender: 2 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    // b is offline and the messages are kept, so both stay unfinished.
    for (const id of ["q1", "q2"]) {
      assert.equal((await a.request(sendNowFrame(id, "b", id, KEEP))).ok, true);
    }
    const third = await a.request(sendNowFrame("q3", "b", "q3", KEEP));
    assert.equal(third.ok, false);
    assert.equal((third.error as Data).code, "quota_exceeded");
    // Finishing one frees a slot.
    await a.request({ type: "recall", id: "q1" });
    assert.equal((await a.request(sendNowFrame("q3", "b", "q3", KEEP))).ok, true);
  });
});

Deno.test("a receiver with max_pending_per_receiver queued deliveries gets the next one rejected as queue_full", async () => {
  await withServer({ limits: { max_pending_per_receiver: 1 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const first = await a.request(sendNowFrame("f1", "b", "queued", KEEP));
    assert.equal((first.data as Data).state, "dispatched");
    const second = await a.request(sendNowFrame("f2", "b", "full", KEEP));
    // spec 7.4: the send succeeds; its delivery is rejected, which completes the message.
    assert.equal(second.ok, true);
    assert.equal((second.data as Data).state, "completed");
    const receipt = await waitReceipt(a, "f2");
    assert.equal(receipt.state, "rejected");
    assert.equal(receipt.reason, "queue_full");
    assert.equal(receipt.endpoint_id, "b");

    const b = await h.online("b");
    await waitMsg(b, "f1");
    await b.request({ type: "ack", from: "a", id: "f1" });
    // The queue has room again.
    await a.request(sendNowFrame("f3", "b", "room", KEEP));
    await waitMsg(b, "f3");
    assert.deepEqual(msgIds(b), ["f1", "f3"]);
  });
});

/** Which of `b`'s pending deliveries carry a push mark, by message id (spec 7.5 step 3). */
async function pushedIds(t: TestServer, endpointId: string): Promise<string[]> {
  const rows = await t.db.all(
    `SELECT m.id FROM deliveries d JOIN messages m ON m.seq = d.seq
     WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.pushed_conn IS NOT NULL ORDER BY m.id`,
    endpointId,
  );
  return rows.map((r) => r.id as string);
}

Deno.test("the push window holds back deliveries beyond delivery_window until an ack frees a slot", async () => {
  await withServer({ limits: { delivery_window: 2 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    for (const id of ["w1", "w2", "w3"]) await a.request(sendNowFrame(id, "b", id, KEEP));
    const b = await h.online("b");
    await b.until(() => msgIds(b).length === 2, "two pushes");
    // spec 6.3: the window is full, so w3 was claimed by nobody.
    assert.deepEqual(msgIds(b), ["w1", "w2"]);
    assert.deepEqual(await pushedIds(h.t, "b"), ["w1", "w2"]);
    await b.request({ type: "ack", from: "a", id: "w1" });
    await b.until(() => msgIds(b).length === 3, "the third push");
    assert.deepEqual(msgIds(b), ["w1", "w2", "w3"]);
  });
});

Deno.test("more big frames than the server-wide big-frame slots all arrive", async () => {
  await withServer({ limits: { delivery_window: 100 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    // spec 7.5: at most 64 frames over 64 KiB in flight; 70 must wait for PUBACKs to free slots.
    const n = 70;
    for (let i = 0; i < n; i++) {
      const resp = await a.request(
        sendNowFrame(`bf${i}`, "b", String(i).padEnd(65 * 1024, "."), KEEP),
      );
      assert.equal(resp.ok, true);
    }
    const b = await h.online("b");
    await b.until(() => msgs(b).length === n, "all big frames");
    const bodies = msgs(b).map((f) => (f.body as Data).data);
    assert.deepEqual(bodies, Array.from({ length: n }, (_, i) => String(i).padEnd(65 * 1024, ".")));
  });
});

Deno.test("acks that claim into the slot they free keep the window, the push order and each message once", async () => {
  const window = 3;
  await withServer(
    { limits: { delivery_window: window, requests_per_second: 1_000_000 } },
    async (h) => {
      await h.endpoints("a", "c", "b");
      const senders = [await h.online("a"), await h.online("c")];
      const n = 40;
      const ids = Array.from({ length: n }, (_, i) => `q${String(i).padStart(2, "0")}`);
      // Queued while b is offline: b's window is full from its first push on, so each ack finds
      // the push loop idle and lends it the claim of the next message.
      for (const [i, id] of ids.entries()) {
        await senders[i % 2].request(sendNowFrame(id, "b", id, KEEP));
      }
      let mostMarked = 0;
      // Each sample is a committed snapshot (on PostgreSQL read a moment after the commit, so a
      // later one): none of them may hold more than the window.
      const samples: Promise<void>[] = [];
      const off = h.t.server.store.onCommit(() => {
        samples.push(
          pushedIds(h.t, "b").then((ids) => {
            mostMarked = Math.max(mostMarked, ids.length);
          }),
        );
      });
      const b = await h.online("b");
      const acks: Promise<unknown>[] = [];
      const acked = new Set<unknown>();
      const ackNew = () => {
        for (const f of msgs(b)) {
          if (acked.has(f.id)) continue;
          acked.add(f.id);
          acks.push(b.request({ type: "ack", from: f.from, id: f.id }));
        }
      };
      // Acks go out as messages arrive, without waiting for the answers.
      b.mqtt.on("message", () => queueMicrotask(ackNew));
      ackNew();
      await b.until(() => acked.size === n, "every message pushed and acked");
      await Promise.all(acks);
      off();
      await Promise.all(samples);
      assert.ok(mostMarked <= window, `at most ${window} pushed and unacked (saw ${mostMarked})`);
      assert.equal(msgIds(b).length, n, "each message once");
      for (const [i, s] of senders.entries()) {
        const own = msgIds(b).filter((id) => ids.indexOf(String(id)) % 2 === i);
        assert.deepEqual(own, ids.filter((_, k) => k % 2 === i), `${s.id}'s messages in order`);
      }
      assert.deepEqual(await pushedIds(h.t, "b"), [], "nothing left marked");
    },
  );
});
