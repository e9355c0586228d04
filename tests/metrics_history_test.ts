// GET /api/admin/metrics/history (docs/admin-api.md): the live overview's figures, sampled by the
// real server from its own state while real MQTT clients send, ack and get rejected.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { sendNowFrame } from "./helpers/messaging.ts";
import { AdminClient, startAdminServer } from "./helpers/admin.ts";
import { quantileRank } from "../server/metrics/history.ts";

const PW = "device-pass-123";

interface Sample {
  t: number;
  window_ms: number;
  connections: { ws: number; tcp: number };
  submitted_per_s: number;
  delivered_per_s: number;
  outcomes: Record<string, number>;
  rejected_by_reason: Record<string, number>;
  commits: number;
  commit_ms_avg: number | null;
  latency_ms_p50: number | null;
  latency_ms_p99: number | null;
}

/** Polls the history until `pred` holds for some sample; bounded in time. */
async function waitSamples(
  admin: AdminClient,
  pred: (all: Sample[]) => boolean,
  what: string,
): Promise<Sample[]> {
  // Windows end 2 s before each sample (HISTORY_SETTLE_MS), so a count shows up after that.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const r = await admin.get("/api/admin/metrics/history");
    assert.equal(r.status, 200, r.text);
    const all = r.data.samples as Sample[];
    if (pred(all)) return all;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

Deno.test("quantileRank picks the nearest rank", () => {
  assert.equal(quantileRank(1, 0.5), 0);
  assert.equal(quantileRank(1, 0.99), 0);
  assert.equal(quantileRank(4, 0.5), 1);
  assert.equal(quantileRank(100, 0.99), 98);
  assert.equal(quantileRank(100, 0.5), 49);
});

Deno.test("the metrics history needs an admin login", async () => {
  const t = await startAdminServer({}, { historyIntervalMs: 100 });
  try {
    const anon = new AdminClient(t.adminUrl);
    const r = await anon.get("/api/admin/metrics/history");
    assert.equal(r.status, 401);
    assert.equal(r.code, "unauthorized");
  } finally {
    await t.close();
  }
});

Deno.test("the metrics history counts connections, sends, acks, rejections and commits", async () => {
  const t = await startAdminServer({}, { historyIntervalMs: 150 });
  const admin = new AdminClient(t.adminUrl);
  const clients: { close(): Promise<void> }[] = [];
  try {
    await admin.login();
    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    await t.createEndpoint("off", PW);
    const first = await admin.get("/api/admin/metrics/history");
    assert.equal(first.data.interval_ms, 150);
    assert.equal(first.data.span_ms, 3_600_000);

    const a = (await online(t.wsUrl, "a", PW)).client;
    clients.push(a);
    const b = (await online(t.wsUrl, "b", PW)).client;
    clients.push(b);
    const now = (await admin.get("/api/admin/metrics/history")).data.now as Record<string, unknown>;
    assert.deepEqual(now.connections, { ws: 2, tcp: 0 });
    assert.equal(now.online, 2);

    const sent = await a.request(sendNowFrame("h1", "b", "hello"));
    assert.equal(sent.ok, true, JSON.stringify(sent));
    await b.waitFrame((f) => f.type === "msg" && f.id === "h1", "msg h1");
    assert.equal((await b.request({ type: "ack", from: "a", id: "h1" })).ok, true);
    // A kept message to an offline endpoint waits; disabling that endpoint rejects it.
    const kept = await a.request(
      sendNowFrame("h2", "off", "nobody home", { offline: { keep: true, ttl_seconds: 600 } }),
    );
    assert.equal(kept.ok, true, JSON.stringify(kept));
    const off = await admin.call("PATCH", "/api/admin/endpoints/off", { body: { enabled: false } });
    assert.equal(off.status, 200, off.text);

    const all = await waitSamples(
      admin,
      (s) =>
        s.some((x) => x.outcomes.accepted >= 1) &&
        s.some((x) => (x.rejected_by_reason.endpoint_disabled ?? 0) >= 1),
      "the accepted and the rejected delivery",
    );
    const sum = (f: (s: Sample) => number) => all.reduce((n, s) => n + f(s), 0);
    assert.equal(sum((s) => s.outcomes.accepted), 1);
    assert.equal(sum((s) => s.outcomes.rejected), 1);
    assert.equal(sum((s) => s.outcomes.expired + s.outcomes.dropped), 0);
    // Two messages: the per-second rates times the windows add up to 2 messages.
    const perWindow = all.map((s) => s.submitted_per_s * (s.window_ms / 1000));
    assert.ok(Math.abs(perWindow.reduce((x, y) => x + y, 0) - 2) < 0.5, String(perWindow));
    const acked = all.find((s) => s.outcomes.accepted === 1)!;
    assert.ok(acked.delivered_per_s > 0);
    assert.ok(acked.latency_ms_p50 !== null && acked.latency_ms_p50 >= 0);
    assert.equal(acked.latency_ms_p99, acked.latency_ms_p50, "one delivery: p50 = p99");
    assert.ok(sum((s) => s.commits) >= 3, "the sends and the ack committed");
    assert.ok(all.some((s) => s.commit_ms_avg !== null && s.commit_ms_avg >= 0));
    assert.ok(all.some((s) => s.connections.ws === 2));
    for (let i = 1; i < all.length; i++) assert.ok(all[i].t > all[i - 1].t, "oldest first");

    // ?since= returns only the newer samples.
    const cut = all[all.length - 1].t;
    const later = await admin.get(`/api/admin/metrics/history?since=${cut}`);
    for (const s of later.data.samples as Sample[]) assert.ok(s.t > cut);
    assert.equal((await admin.get("/api/admin/metrics/history?since=soon")).status, 400);
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});
