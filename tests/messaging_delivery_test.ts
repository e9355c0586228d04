// Delivery of direct messages over MQTT.js and WebSocket (spec 6.2, 6.3, 7.4, 7.5).
import assert from "node:assert/strict";
import {
  type Data,
  KEEP,
  msgs,
  receipts,
  sendFrame,
  sendNowFrame,
  waitMsg,
  waitReceipt,
  withServer,
} from "./helpers/messaging.ts";

Deno.test("a message acked once is never delivered again, and a re-push after a reconnect carries the same id", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const first = await h.session("b");
    const sent = await a.request(sendNowFrame("m1", "b", "once"));
    assert.equal(sent.ok, true, JSON.stringify(sent));
    const pushed = await waitMsg(first.client, "m1");
    // The receiver goes away before acking; spec 6.3: the delivery stays pending.
    await first.client.close();

    const b = await h.online("b", first.token!);
    const repushed = await waitMsg(b, "m1", "m1 again");
    assert.deepEqual(repushed, pushed, "the re-push is the same frame, so the app can dedup by id");
    const seen = new Set([...msgs(first.client), ...msgs(b)].map((f) => `${f.from}/${f.id}`));
    assert.deepEqual([...seen], ["a/m1"]);

    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "m1" })).data, {
      result: "accepted",
    });
    // A later message proves nothing more of m1 came after the ack.
    await a.request(sendNowFrame("m2", "b", "after"));
    await waitMsg(b, "m2");
    await b.request({ type: "ack", from: "a", id: "m2" });
    await a.until(() => receipts(a).length === 2, "2 receipts");
    assert.equal(msgs(b, "m1").length, 1);
    assert.equal(msgs(b, "m2").length, 1);
    assert.deepEqual(receipts(a).map((r) => [r.id, r.state]), [["m1", "accepted"], [
      "m2",
      "accepted",
    ]]);
  });
});

Deno.test("a kept message sent while the receiver is offline arrives when it comes online", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const resp = await a.request(sendNowFrame("k1", "b", "kept", KEEP));
    assert.equal((resp.data as Data).state, "dispatched", JSON.stringify(resp));
    const before = await a.request({ type: "status", id: "k1" });
    assert.deepEqual((before.data as Data).items, [{
      endpoint_id: "b",
      state: "pending",
      reason: "",
    }]);

    const b = await h.online("b");
    const msg = await waitMsg(b, "k1");
    assert.equal((msg.body as Data).data, "kept");
    assert.equal(msg.send_at_ms, (resp.data as Data).send_at_ms);
    await b.request({ type: "ack", from: "a", id: "k1" });
    const receipt = await waitReceipt(a, "k1");
    assert.equal(receipt.state, "accepted");
  });
});

Deno.test("a message delayed 2 s is scheduled and arrives at its send_at, not before", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const resp = await a.request(sendFrame("d1", "b", "later", { delay_ms: 2000 }));
    const data = resp.data as Data;
    assert.equal(data.state, "scheduled");
    const sendAt = data.send_at_ms as number;
    assert.ok(Math.abs(sendAt - (Date.now() + 2000)) < 500);
    let arrivedAt = 0;
    await b.until(() => {
      if (arrivedAt === 0 && msgs(b, "d1").length > 0) arrivedAt = Date.now();
      return arrivedAt > 0;
    }, "delayed msg");
    // Judged against its own send_at (one clock for server and test), not the response's arrival,
    // which a loaded machine can delay: never early, and not long after.
    const late = arrivedAt - sendAt;
    assert.ok(late >= -100 && late < 3000, `arrived ${late} ms after send_at`);
    assert.equal(msgs(b, "d1")[0].send_at_ms, data.send_at_ms);
  });
});

Deno.test("bodies over 64 KiB go through the big-frame path and all arrive intact", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const bodies = ["x", "y", "z"].map((c, i) => c.repeat(100 * 1024 + i));
    for (const [i, text] of bodies.entries()) {
      const resp = await a.request(sendNowFrame(`big${i}`, "b", text));
      assert.equal(resp.ok, true, JSON.stringify(resp.error));
    }
    for (const [i, text] of bodies.entries()) {
      const msg = await waitMsg(b, `big${i}`);
      assert.equal((msg.body as Data).data, text);
      await b.request({ type: "ack", from: "a", id: `big${i}` });
    }
    await a.until(() => receipts(a).length === 3, "3 receipts");
    assert.ok(receipts(a).every((f) => f.state === "accepted"));
  });
});

Deno.test("a takeover re-pushes the deliveries pushed but not acked on the old connection", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b1 = await h.online("b");
    await a.request(sendNowFrame("t1", "b", "take me"));
    await waitMsg(b1, "t1", "t1 on the first connection");

    // spec 5: a password login from elsewhere takes the endpoint over (MQTT 5 reason 0x8E).
    const b2 = await h.online("b");
    assert.equal(await b1.closedWith("old connection closed"), 0x8e);
    const msg = await waitMsg(b2, "t1", "t1 re-pushed");
    assert.equal((msg.body as Data).data, "take me");
    assert.deepEqual((await b2.request({ type: "ack", from: "a", id: "t1" })).data, {
      result: "accepted",
    });
    const receipt = await waitReceipt(a, "t1");
    assert.equal(receipt.state, "accepted");
  });
});

Deno.test("with record_retention_days 0 a new message that reuses a deleted seq is pushed with its own content", async () => {
  // Completion deletes the record at once; SQLite then hands the same seq to the next message.
  await withServer({ record_retention_days: 0 }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    await a.request(sendNowFrame("z1", "b", "first"));
    await waitMsg(b, "z1");
    await b.request({ type: "ack", from: "a", id: "z1" });
    await waitReceipt(a, "z1", "z1 receipt");
    assert.equal((await a.request({ type: "status", id: "z1" })).ok, false, "record deleted");

    await a.request(sendNowFrame("z2", "b", "second"));
    await b.until(() => msgs(b).length === 2, "a second msg");
    const second = msgs(b)[1];
    assert.equal(second.id, "z2");
    assert.equal((second.body as Data).data, "second");
    assert.deepEqual((await b.request({ type: "ack", from: "a", id: "z2" })).data, {
      result: "accepted",
    });
  });
});
