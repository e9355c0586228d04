// Webhooks end to end (issue 34): a real `nixmsg serve` child (shipped permissions) POSTs to a
// real HTTP receiver on 127.0.0.1 (allow-listed in the test config). Each event must arrive
// exactly once per event id after dedup, signed, across failures, an outage and a kill -9.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { KEEP, PW, sendNowFrame, waitMsg, waitReceipt } from "./helpers/messaging.ts";
import { type Receiver, startReceiver } from "./helpers/webhook_receiver.ts";
import { openDb } from "../server/store/db.ts";
import { dbPath } from "../server/app/paths.ts";
import { putWebhook } from "../server/store/ops/webhooks.ts";
import { newWebhookSecret } from "../server/webhooks/signature.ts";
import type { TestHome } from "./helpers/server_process.ts";

const CONFIG = {
  webhooks: {
    allow: ["127.0.0.1/32"],
    concurrency: 4,
    connect_timeout_seconds: 1,
    response_timeout_seconds: 2,
    retry_initial_ms: 100,
    retry_max_seconds: 1,
  },
};

interface World {
  home: TestHome;
  receiver: Receiver;
  server: ServerProcess;
  secret: string;
  clients: TestClient[];
  restart(): Promise<void>;
  session(id: string): Promise<TestClient>;
}

/** Endpoints a and b; b's webhook points at a fresh receiver. */
async function withWorld(
  fn: (w: World) => Promise<void>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const secret = newWebhookSecret();
  const receiver = startReceiver({ secret });
  const home = await prepareHome({ ...CONFIG, ...extra }, ["a", "b"], PW);
  const db = openDb(dbPath(home.dataDir));
  try {
    putWebhook(db, { endpointId: "b", url: receiver.url, enabled: true, secret }, Date.now());
  } finally {
    db.close();
  }
  const w: World = {
    home,
    receiver,
    secret,
    clients: [],
    server: await startServerProcess(home),
    async restart() {
      w.server = await startServerProcess(home);
    },
    async session(id) {
      const { client } = await online(`ws://127.0.0.1:${w.server.port}/mqtt`, id, PW);
      w.clients.push(client);
      return client;
    },
  };
  try {
    await fn(w);
  } finally {
    for (const c of w.clients) await c.close();
    assert.equal(await w.server.stop(), 0);
    await receiver.close();
    await home.cleanup();
  }
}

function msgEvents(r: Receiver, id?: string) {
  return r.hits.filter((h) => h.event.type === "msg" && (id === undefined || h.event.id === id));
}

/** Resolves once the server logged a line matching `pred` (checked as lines arrive). */
async function untilLog(s: ServerProcess, pred: (l: Record<string, unknown>) => boolean) {
  const deadline = Date.now() + 20_000;
  while (!s.logs.some(pred)) {
    if (Date.now() > deadline) throw new Error("timed out waiting for a server log line");
    await new Promise((r) => setTimeout(r, 25));
  }
}

Deno.test({
  name: "an endpoint with only a webhook gets every message and every receipt of what it sent",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    // While b has an MQTT session, MQTT takes precedence: the webhook sees nothing.
    const b = await w.session("b");
    const a = await w.session("a");
    const viaMqtt = await a.request(sendNowFrame("via-mqtt", "b", "over mqtt"));
    assert.equal(viaMqtt.ok, true);
    await waitMsg(b, "via-mqtt");
    await b.request({ type: "ack", from: "a", id: "via-mqtt" });
    // b sends 5 messages over MQTT, then leaves: their receipts must reach its webhook.
    for (let i = 0; i < 5; i++) {
      assert.equal((await b.request(sendNowFrame(`b${i}`, "a", `from b ${i}`))).ok, true);
    }
    await b.close();
    for (let i = 0; i < 5; i++) {
      await waitMsg(a, `b${i}`);
      await a.request({ type: "ack", from: "b", id: `b${i}` });
    }
    // a sends 30 messages to b (half kept, half not): all go to the webhook.
    const sent: string[] = [];
    for (let i = 0; i < 30; i++) {
      const id = `m${i}`;
      const extra = i % 2 === 0 ? KEEP : {};
      assert.equal((await a.request(sendNowFrame(id, "b", `hello ${i} 中文`, extra))).ok, true);
      sent.push(id);
    }
    const r = w.receiver;
    await r.until(
      () =>
        sent.every((id) => msgEvents(r, id).length > 0) &&
        [...r.delivered().values()].filter((h) => h.event.type === "receipt").length === 5,
      "30 msg events and 5 receipts",
    );
    const lost = sent.filter((id) => msgEvents(r, id).length === 0);
    assert.equal(lost.length, 0, `lost ${lost.length}: ${lost}`);
    assert.equal(msgEvents(r, "via-mqtt").length, 0);
    for (const h of r.hits) assert.ok(h.signed, `bad signature on ${h.id}`);
    const m7 = msgEvents(r, "m7")[0];
    assert.equal(m7.id.startsWith("msg_"), true);
    assert.deepEqual(m7.event.body, {
      enc: "utf8",
      content_type: "text/plain; charset=utf-8",
      data: "hello 7 中文",
    });
    assert.equal(m7.event.from, "a");
    const receipts = [...r.delivered().values()].filter((h) => h.event.type === "receipt");
    assert.deepEqual(receipts.map((h) => h.event.id).sort(), ["b0", "b1", "b2", "b3", "b4"]);
    for (const h of receipts) {
      assert.equal(h.event.state, "accepted");
      assert.equal(h.id, `rcpt_${h.event.receipt_id}`);
    }
    // a hears `accepted` for each message: the 2xx was b's ack.
    for (const id of sent) {
      const rc = await waitReceipt(a, id);
      assert.equal(rc.state, "accepted");
    }
  }));

Deno.test({
  name: "failed attempts (500, timeout, refused) are retried with the same event id until a 2xx",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const a = await w.session("a");
    const r = w.receiver;
    // Two 500s, then 200.
    r.behave((_h, n) => n < 2 ? 500 : 200);
    await a.request(sendNowFrame("e500", "b", "x", KEEP));
    await r.until(() => r.delivered().size === 1, "e500 delivered");
    assert.deepEqual(msgEvents(r, "e500").map((h) => h.status), [500, 500, 200]);
    assert.equal(new Set(msgEvents(r, "e500").map((h) => h.id)).size, 1);
    assert.equal((await waitReceipt(a, "e500")).state, "accepted");
    // An answer slower than response_timeout_seconds fails; the retry succeeds.
    r.behave((_h, n) => n < 1 ? { status: 200, delayMs: 3000 } : 200);
    await a.request(sendNowFrame("slow", "b", "x", KEEP));
    await r.until(() => msgEvents(r, "slow").length >= 2, "slow retried");
    assert.equal(new Set(msgEvents(r, "slow").map((h) => h.id)).size, 1);
    assert.equal((await waitReceipt(a, "slow")).state, "accepted");
    // Receiver down (connection refused), then back on the same port.
    r.behave(() => 200);
    await r.stop();
    await a.request(sendNowFrame("outage", "b", "x", KEEP));
    await untilLog(w.server, (l) => l.msg === "webhook failing" && l.error === "refused");
    r.start();
    await r.until(() => msgEvents(r, "outage").length === 1, "outage delivered");
    assert.equal((await waitReceipt(a, "outage")).state, "accepted");
    for (const h of r.hits) assert.ok(h.signed, `bad signature on ${h.id}`);
  }));

Deno.test({
  name: "a recall after a failed POST sends one revoked event",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const a = await w.session("a");
    const r = w.receiver;
    r.behave((h) => h.event.type === "msg" ? 500 : 200);
    await a.request(sendNowFrame("rv", "b", "x", KEEP));
    await r.until(() => msgEvents(r, "rv").length >= 1, "first attempt");
    const recall = await a.request({ type: "recall", id: "rv" });
    assert.equal((recall.data as Record<string, unknown>).result, "recalled");
    await r.until(
      () => r.hits.some((h) => h.event.type === "revoked" && h.status === 200),
      "revoked",
    );
    const revoked = r.hits.filter((h) => h.event.type === "revoked");
    assert.deepEqual(revoked.map((h) => [h.event.id, h.event.reason, h.event.from]), [
      ["rv", "recalled", "a"],
    ]);
    assert.ok(revoked[0].id.startsWith("rvk_"));
    assert.ok(revoked[0].signed);
  }));

Deno.test({
  name: "kill -9 with webhook events in flight loses none; duplicates keep their event id",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const r = w.receiver;
    r.behave(() => ({ status: 200, delayMs: 100 }));
    const a = await w.session("a");
    // b sends 20 over MQTT and leaves; a's acks make 20 receipts owed to b's webhook.
    const b = await w.session("b");
    const fromB: string[] = [];
    for (let i = 0; i < 20; i++) {
      fromB.push(`r${i}`);
      assert.equal((await b.request(sendNowFrame(`r${i}`, "a", "x"))).ok, true);
    }
    await b.close();
    for (const id of fromB) {
      await waitMsg(a, id);
      await a.request({ type: "ack", from: "b", id });
    }
    const sent: string[] = [];
    for (let i = 0; i < 60; i++) {
      sent.push(`k${i}`);
      assert.equal((await a.request(sendNowFrame(`k${i}`, "b", `k ${i}`, KEEP))).ok, true);
    }
    // Killed while the receiver holds requests the server has not seen answered.
    await r.until(() => msgEvents(r).length >= 10 && r.inflight > 0, "msg events in flight");
    const inFlight = r.inflight;
    await w.server.kill();
    w.clients.length = 0;
    const before = r.delivered().size;
    await w.restart();
    await r.until(
      () => sent.every((id) => msgEvents(r, id).some((h) => h.status === 200)),
      "every message after the restart",
      60_000,
    );
    const lost = sent.filter((id) => !msgEvents(r, id).some((h) => h.status === 200));
    assert.equal(lost.length, 0, `lost ${lost.length}`);
    const receiptOf = (id: string) =>
      [...r.delivered().values()].filter((h) => h.event.type === "receipt" && h.event.id === id);
    await r.until(() => fromB.every((id) => receiptOf(id).length > 0), "every receipt", 60_000);
    const lostReceipts = fromB.filter((id) => receiptOf(id).length !== 1);
    assert.equal(lostReceipts.length, 0, `receipts lost or doubled: ${lostReceipts.length}`);
    // The server learns of each 2xx: a hears `accepted` for every message, including those whose
    // answer the kill cut off (they are POSTed again, with the same event id, after their lease).
    const a2 = await w.session("a");
    for (const id of sent) assert.equal((await waitReceipt(a2, id)).state, "accepted");
    // One event id per message; any repeat is the same event id (a retry), never a new one.
    const idsOf = new Map<string, Set<string>>();
    for (const h of msgEvents(r)) {
      const set = idsOf.get(h.event.id as string) ?? new Set();
      set.add(h.id);
      idsOf.set(h.event.id as string, set);
    }
    for (const [msg, ids] of idsOf) assert.equal(ids.size, 1, `${msg} had event ids ${[...ids]}`);
    const duplicates = msgEvents(r).length - idsOf.size;
    console.log(
      `delivered before kill ${before}, in flight ${inFlight}, duplicates by event id ${duplicates}`,
    );
    for (const h of r.hits) assert.ok(h.signed);
  }));

Deno.test({
  name: "a receiver outage of 60 s loses no message and no receipt",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const r = w.receiver;
    const a = await w.session("a");
    // b sends over MQTT and leaves, so the receipts of what it sent go to its webhook.
    const b = await w.session("b");
    for (let i = 0; i < 3; i++) {
      assert.equal((await b.request(sendNowFrame(`s${i}`, "a", "x"))).ok, true);
    }
    await b.close();
    await r.stop();
    const down = Date.now();
    const sent: string[] = [];
    for (let i = 0; i < 20; i++) {
      sent.push(`o${i}`);
      assert.equal((await a.request(sendNowFrame(`o${i}`, "b", `o ${i}`, KEEP))).ok, true);
    }
    for (let i = 0; i < 3; i++) {
      await waitMsg(a, `s${i}`);
      await a.request({ type: "ack", from: "b", id: `s${i}` });
    }
    await untilLog(w.server, (l) => l.msg === "webhook failing" && l.error === "refused");
    // The outage lasts 60 s; the server keeps retrying meanwhile (up to retry_max_seconds apart).
    await new Promise((res) => setTimeout(res, Math.max(0, 60_000 - (Date.now() - down))));
    r.start();
    await r.until(
      () =>
        sent.every((id) => msgEvents(r, id).length > 0) &&
        [...r.delivered().values()].filter((h) => h.event.type === "receipt").length === 3,
      "every message and receipt after the outage",
      30_000,
    );
    const lost = sent.filter((id) => msgEvents(r, id).length === 0);
    assert.equal(lost.length, 0, `lost ${lost.length}`);
    assert.equal(r.delivered().size, 23, "one delivered event per event id");
    for (const id of sent) assert.equal((await waitReceipt(a, id)).state, "accepted");
  }));

Deno.test({
  name:
    "a webhook that keeps failing ends messages as for a device: expired at TTL, dropped at grace",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const r = w.receiver;
    r.behave((h) => h.event.type === "msg" ? 503 : 200);
    const a = await w.session("a");
    const kept = { offline: { keep: true, ttl_seconds: 2 } };
    assert.equal((await a.request(sendNowFrame("ttl", "b", "x", kept))).ok, true);
    assert.equal((await a.request(sendNowFrame("grace", "b", "x"))).ok, true);
    const ttl = await waitReceipt(a, "ttl");
    assert.deepEqual([ttl.state, ttl.reason], ["expired", "ttl"]);
    const grace = await waitReceipt(a, "grace");
    assert.deepEqual([grace.state, grace.reason], ["dropped", "offline"]);
    // Both were POSTed and failed before they ended: the webhook hears `revoked` for each.
    await r.until(
      () => r.hits.filter((h) => h.event.type === "revoked" && h.status === 200).length === 2,
      "two revoked events",
    );
    const reasons = r.hits.filter((h) => h.event.type === "revoked").map((h) =>
      `${h.event.id}:${h.event.reason}`
    ).sort();
    assert.deepEqual(reasons, ["grace:dropped", "ttl:expired"]);
    assert.ok(msgEvents(r, "ttl").length >= 2, "retried until the TTL ended");
  }, { limits: { grace_seconds: 2 } }));

Deno.test({
  name: "a stored webhook to an address the allow-list no longer holds is refused at connect time",
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withWorld(async (w) => {
    const a = await w.session("a");
    assert.equal((await a.request(sendNowFrame("ssrf", "b", "x", KEEP))).ok, true);
    await untilLog(w.server, (l) => l.msg === "webhook failing" && l.error === "address_refused");
    assert.equal(w.receiver.hits.length, 0, "nothing reached the receiver");
    for (const l of w.server.logs) {
      const text = JSON.stringify(l);
      assert.ok(
        !text.includes(w.receiver.url) && !text.includes(w.secret),
        "no URL or secret logged",
      );
    }
  }, { webhooks: { ...CONFIG.webhooks, allow: [] } }));
