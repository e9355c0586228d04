// Checklist items 2, 3, 4 and 11 (spec 9 接入清单): one-to-one messages, sends across a
// disconnect, resends and lost acks, and the local size limit.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Message } from "@nixevol/nixmsg";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Harness } from "../helpers/harness.ts";
import { Proxy } from "../helpers/proxy.ts";
import { code } from "../helpers/errors.ts";

let h: Harness;
const proxies: Proxy[] = [];
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await Promise.all(proxies.map((p) => p.close()));
  await h?.stop();
});

async function proxy(): Promise<Proxy> {
  const p = await Proxy.start(h.address);
  proxies.push(p);
  return p;
}

const byId = (id: string) => (m: Message) => m.id === id;

test("checklist 2: a one-to-one message arrives once, with body, meta and receipt", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb, { transport: "tcp" });
  const sent = await a.client.send(eb.id, "你好 <b>&", { meta: { k: "v" } });
  assert.match(sent.id, /^[0-9a-f-]{36}$/);
  assert.equal(sent.state, "dispatched");
  const got = await b.messages.waitFor(byId(sent.id), "the message");
  assert.equal(text(got), "你好 <b>&");
  assert.equal(got.from, ea.id);
  assert.deepEqual(got.to, { kind: "endpoint", id: eb.id });
  assert.deepEqual(got.meta, { k: "v" });
  assert.equal(got.sendAtMs, sent.sendAtMs);
  const receipt = await a.receipts.waitFor((r) => r.id === sent.id, "receipt");
  assert.equal(receipt.state, "accepted");
  assert.equal(receipt.endpointId, eb.id);

  const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
  const bin = await a.client.send(eb.id, bytes, { contentType: "application/x-test" });
  const gotBin = await b.messages.waitFor(byId(bin.id), "the binary message");
  assert.deepEqual(gotBin.body, bytes);
  assert.equal(gotBin.contentType, "application/x-test");
  assert.equal(b.messages.count(byId(sent.id)), 1, "the callback ran once");
});

test("checklist 3: a send made while disconnected arrives after the reconnect, once", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const p = await proxy();
  const a = await online(`ws://${p.address}/mqtt`, ea);
  const b = await online(h.info.ws_url, eb);
  p.refuse = true;
  p.cut();
  await a.states.waitFor((s) => s.state === "reconnecting", "reconnecting");
  const pending = a.client.send(eb.id, "sent while offline", { keep: true });
  assert.equal(b.messages.count(), 0);
  p.refuse = false;
  const sent = await pending;
  await b.messages.waitFor(byId(sent.id), "the queued message");
  const marker = await a.client.send(eb.id, "marker");
  await b.messages.waitFor(byId(marker.id), "the marker");
  assert.equal(b.messages.count(byId(sent.id)), 1, "delivered once");
  assert.equal(b.messages.count(), 2);
});

test("checklist 4a: a send whose response was lost is resent with the same id and delivered once", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const p = await proxy();
  const a = await online(`ws://${p.address}/mqtt`, ea);
  const b = await online(h.info.ws_url, eb);
  p.holdDown = true; // the server commits the send, its resp never reaches A
  const pending = a.client.send(eb.id, "resp lost", { keep: true });
  const got = await b.messages.waitFor((m) => text(m) === "resp lost", "the message");
  p.cut();
  p.holdDown = false;
  const sent = await pending; // resent after the reconnect; the server answers the original
  assert.equal(sent.id, got.id, "the same message id");
  const marker = await a.client.send(eb.id, "marker");
  await b.messages.waitFor(byId(marker.id), "the marker");
  assert.equal(b.messages.count(byId(sent.id)), 1, "delivered once");
  const status = await a.client.status(sent.id);
  assert.equal(status.items.length, 1, "one delivery");
  assert.equal(status.items[0]!.endpointId, eb.id);
});

test("checklist 4b: a lost ack makes the server push again; the SDK re-acks without a second callback", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const p = await proxy();
  const a = await online(h.info.ws_url, ea);
  const b = await online(`ws://${p.address}/mqtt`, eb);
  let calls = 0;
  b.client.onMessage(() => {
    // The connection dies while the app handles the message: its ack is lost.
    if (++calls === 1) p.cut();
  });
  const sent = await a.client.send(eb.id, "ack lost", { keep: true });
  await b.states.waitFor((s) => s.state === "reconnecting", "reconnecting");
  const receipt = await a.receipts.waitFor((r) => r.id === sent.id, "the receipt");
  assert.equal(receipt.state, "accepted", "the re-ack reached the server");
  assert.equal(calls, 1, "the application saw the message once");
  assert.equal(b.messages.count(byId(sent.id)), 1);
});

test("checklist 11: a body over 256 KiB fails locally; exactly 256 KiB goes through", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  await assert.rejects(
    a.client.send(eb.id, new Uint8Array(262_145)),
    code("body_too_large"),
  );
  await assert.rejects(
    a.client.send(eb.id, "x".repeat(262_145)),
    code("body_too_large"),
  );
  await assert.rejects(
    a.client.send(eb.id, "\u0001".repeat(262_144)),
    code("frame_too_large"),
  );
  assert.equal(a.client.state, "online", "nothing was published, the connection stays");
  const big = new Uint8Array(262_144).map((_, i) => i % 256);
  const sent = await a.client.send(eb.id, big);
  const got = await b.messages.waitFor(byId(sent.id), "the 256 KiB message");
  assert.deepEqual(got.body, big);
  assert.equal(a.states.count((s) => s.state === "reconnecting"), 0);
});
