// Checklist items 5, 6 and 7 (spec 9 接入清单): recall within a delay, scheduled sends, and
// keeping messages for offline recipients.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Message } from "@nixevol/nixmsg";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Harness } from "../helpers/harness.ts";

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

const byId = (id: string) => (m: Message) => m.id === id;

test("checklist 5: a message recalled within its 10 s delay never reaches the recipient", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  const recalled = await a.client.send(eb.id, "recall me", { delay: 10_000 });
  // Due no earlier than the recalled one: it would have been pushed first (spec 7.5 order).
  const marker = await a.client.send(eb.id, "marker", { delay: 10_000 });
  assert.equal(recalled.state, "scheduled");
  const r = await a.client.recall(recalled.id);
  assert.deepEqual(r, { result: "recalled", recalled: 0, accepted: 0, other: 0 });
  const status = await a.client.status(recalled.id);
  assert.equal(status.state, "completed");
  assert.equal(status.reason, "recalled");
  await b.messages.waitFor(byId(marker.id), "the marker after its delay", 20_000);
  assert.equal(b.messages.count(byId(recalled.id)), 0, "no callback for the recalled message");
  assert.equal(a.receipts.count((x) => x.id === recalled.id), 0, "a recall sends no receipt");
});

test("checklist 6: a message scheduled 2 s ahead arrives at its time", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  const at = new Date(Date.now() + 2000);
  const sent = await a.client.send(eb.id, "at time", { sendAt: at });
  assert.equal(sent.state, "scheduled");
  assert.ok(
    Math.abs(sent.sendAtMs - (at.getTime() + a.client.clockOffsetMs)) <= 1,
    "sendAt converted with the clock offset",
  );
  const got = await b.messages.waitFor(byId(sent.id), "the scheduled message", 10_000);
  const arrivedServerTime = b.client.serverNow();
  assert.equal(got.sendAtMs, sent.sendAtMs);
  assert.ok(
    arrivedServerTime >= sent.sendAtMs - 100,
    `arrived ${sent.sendAtMs - arrivedServerTime} ms early`,
  );
  assert.ok(arrivedServerTime <= sent.sendAtMs + 3000, "arrived late");
});

test("checklist 7: a kept message waits for an offline recipient; an expired one never arrives", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  // B is offline. A message that is not kept is dropped; a kept one waits.
  const dropped = await a.client.send(eb.id, "not kept");
  const kept = await a.client.send(eb.id, "kept", { keep: true, ttl: 60 });
  const shortLived = await a.client.send(eb.id, "kept 1 s", { keep: true, ttl: 1 });
  const d = await a.receipts.waitFor((r) => r.id === dropped.id, "the dropped receipt");
  assert.equal(d.state, "dropped");
  const e = await a.receipts.waitFor((r) => r.id === shortLived.id, "the expired receipt", 10_000);
  assert.equal(e.state, "expired");
  assert.equal(e.endpointId, eb.id);

  // B comes online later: it gets the kept message, not the dropped or the expired one.
  const b = await online(h.info.ws_url, eb);
  const got = await b.messages.waitFor(byId(kept.id), "the kept message");
  assert.equal(text(got), "kept");
  const marker = await a.client.send(eb.id, "marker");
  await b.messages.waitFor(byId(marker.id), "the marker");
  assert.equal(b.messages.count(byId(dropped.id)), 0);
  assert.equal(b.messages.count(byId(shortLived.id)), 0);
  const accepted = await a.receipts.waitFor((r) => r.id === kept.id, "the kept receipt");
  assert.equal(accepted.state, "accepted");
});
