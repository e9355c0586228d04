// Behaviour of spec 9 beyond the checklist: fatal frames, admin kicks, revoked frames, manual
// acks, rate limiting, presence and the directory.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Message } from "@nixevol/nixmsg";
import { closeAll, online, text, track } from "../helpers/clients.ts";
import { within } from "../helpers/events.ts";
import { Harness } from "../helpers/harness.ts";
import { Proxy } from "../helpers/proxy.ts";
import { code, codeOf } from "../helpers/errors.ts";

const NO_RECONNECT_WINDOW_MS = 2500;

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

const byId = (id: string) => (m: Message) => m.id === id;

test("fatal (endpoint disabled) stops the client: kicked with the reason, no reconnect (spec 6.8)", async () => {
  const ep = await h.endpoint();
  const proxy = await Proxy.start(h.address);
  try {
    const a = await online(`ws://${proxy.address}/mqtt`, ep);
    const r = await h.admin("PATCH", `/api/admin/endpoints/${ep.id}`, { enabled: false });
    assert.equal(r.status, 200);
    const ev = await a.states.waitFor((s) => s.state === "kicked", "kicked");
    assert.equal(ev.reason, "disabled");
    await assert.rejects(a.client.send(ep.id, "x"), code("kicked"));
    await proxy.accepted.expectNone(() => true, "a reconnect after fatal", NO_RECONNECT_WINDOW_MS);
  } finally {
    await proxy.close();
  }
});

test("an admin kick only disconnects: the SDK reconnects with its token (spec 6.8)", async () => {
  const ep = await h.endpoint();
  const a = await online(h.info.ws_url, ep);
  const r = await h.admin("POST", `/api/admin/endpoints/${ep.id}/kick`);
  assert.equal(r.status, 200);
  await a.states.waitFor((s) => s.state === "reconnecting", "reconnecting");
  await a.states.waitCount(2, (s) => s.state === "online", "online again");
  assert.equal(a.sessions.count(), 1, "reconnected with the token");
  assert.equal((await a.client.getSelf()).id, ep.id);
});

test("MQTT 3.1.1: a refused password is auth_failed too (return code 4)", async () => {
  const ep = await h.endpoint();
  const a = track(h.info.tcp_url, ep.id, { password: "wrong-password" }, {
    transport: "tcp",
    mqttVersion: 4,
  });
  const ev = await a.states.waitFor((s) => s.state === "auth_failed", "auth_failed");
  assert.equal(ev.reason, "bad_credentials");
  const ok = await online(h.info.tcp_url, ep, { transport: "tcp", mqttVersion: 4 });
  assert.equal((await ok.client.getSelf()).id, ep.id);
});

test("manual mode: a recalled, unacked message is reported revoked and not acked (spec 6.4)", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb, { ackMode: "manual" });
  const sent = await a.client.send(eb.id, "recall after push", { keep: true });
  const got = await b.messages.waitFor(byId(sent.id), "the message");
  const r = await a.client.recall(sent.id);
  assert.equal(r.result, "recalled");
  const rev = await b.revoked.waitFor((x) => x.id === sent.id, "revoked");
  assert.deepEqual(rev, { id: sent.id, from: ea.id, reason: "recalled" });
  await b.client.ack(got); // too late: not sent
  const kept = await a.client.send(eb.id, "acked by hand", { keep: true });
  const m2 = await b.messages.waitFor(byId(kept.id), "the second message");
  await b.client.ack(m2);
  const receipt = await a.receipts.waitFor((x) => x.id === kept.id, "receipt");
  assert.equal(receipt.state, "accepted");
  assert.equal(a.receipts.count((x) => x.id === sent.id), 0, "a recall has no receipt");
});

test("manual mode: an ack after the server dropped the delivery counts as revoked (spec 9)", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb, { ackMode: "manual" });
  const sent = await a.client.send(eb.id, "ack me late"); // not kept: dropped after the 2 s timeout
  const got = await b.messages.waitFor(byId(sent.id), "the message");
  const dropped = await a.receipts.waitFor((x) => x.id === sent.id, "the dropped receipt", 10_000);
  assert.equal(dropped.state, "dropped");
  // The server also sends `revoked` (best effort); either way the app learns it once.
  await b.revoked.waitFor((x) => x.id === sent.id, "revoked");
  await b.client.ack(got);
  assert.equal(b.revoked.count((x) => x.id === sent.id), 1);
});

test("sends beyond the rate limit are retried with backoff and all arrive once (spec 9)", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  const n = 250; // the bucket holds 100 and refills 50/s
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) => a.client.send(eb.id, `n${i}`, { receipt: false })),
  );
  assert.equal(new Set(results.map((r) => r.id)).size, n);
  await b.messages.waitCount(n, () => true, `${n} messages`, 30_000);
  assert.equal(new Set(b.messages.items.map(text)).size, n, "each once");
  // Other requests get rate_limited directly.
  const burst = await Promise.allSettled(Array.from({ length: 150 }, () => a.client.getSelf()));
  const limited = burst.filter((r) => r.status === "rejected");
  assert.ok(limited.length > 0, "some requests were refused");
  for (const r of limited) {
    assert.equal(codeOf((r as PromiseRejectedResult).reason), "rate_limited");
  }
});

test("presence, directory and presence notices, watched again after a reconnect (spec 6.5)", async () => {
  const [ea, eb] = [await h.endpoint({ name: "Alpha" }), await h.endpoint({ name: "Beta" })];
  const proxy = await Proxy.start(h.address);
  try {
    const a = await online(`ws://${proxy.address}/mqtt`, ea);
    await a.client.watchPresence([eb.id]);
    const b = await online(h.info.ws_url, eb);
    const on = await a.presence.waitFor((p) => p.id === eb.id && p.online, "B online");
    assert.ok(on.atMs > 0);
    const [pa, pb, pn] = await a.client.presence([ea.id, eb.id, "nobody-here"]);
    assert.equal(pa!.online, true);
    assert.equal(pb!.online, true);
    assert.equal(pn!.notFound, true);
    const dir = await a.client.directory("", "beta");
    assert.ok(dir.items.some((e) => e.id === eb.id && e.name === "Beta" && e.online));
    await b.client.close();
    await a.presence.waitFor((p) => p.id === eb.id && !p.online, "B offline");

    // The server forgets the watch with the connection; the SDK sends it again.
    proxy.cut();
    await a.states.waitCount(2, (s) => s.state === "online", "A online again");
    await a.client.getSelf(); // the re-sent watch was handled before this request
    await online(h.info.ws_url, eb);
    await a.presence.waitCount(2, (p) => p.id === eb.id && p.online, "B online, seen again");

    await a.client.updateSelf({ name: "Alpha 2", defaultDelayMs: 0 });
    assert.equal((await a.client.getSelf()).name, "Alpha 2");
  } finally {
    await proxy.close();
  }
});

test("close() on a stalled connection returns promptly and fails the send in flight", async () => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  const proxy = await Proxy.start(h.address);
  try {
    const a = await online(`ws://${proxy.address}/mqtt`, ea);
    proxy.holdDown = true; // no PUBACK and no resp come back
    const failed = assert.rejects(
      a.client.send(eb.id, "stalled"),
      code("closed"),
    );
    // close drains for its bound (1 s here), then gives up what is left.
    await within(a.client.close({ timeoutMs: 1000 }), 4000, "close on a stalled connection");
    await failed;
    assert.equal(a.client.state, "offline");
  } finally {
    await proxy.close();
  }
});
