// /metrics (spec 4.3, 12, 13): access on a shared port (metrics.token) and on a separate
// admin_listen (no auth), counts and durations only, and counters that move with traffic.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { AdminClient, adminSession, startAdminServer } from "./helpers/admin.ts";

async function scrape(url: string, token?: string): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  const res = await fetch(`${url}/metrics`, { headers });
  return { status: res.status, text: await res.text() };
}

/** The value of one sample line, e.g. `nixmsg_connections{transport="ws"}`; 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

Deno.test("on a shared port without metrics.token, /metrics is 404", async () => {
  const t = await startAdminServer();
  try {
    const r = await scrape(t.httpUrl);
    assert.equal(r.status, 404);
    assert.equal(JSON.parse(r.text).error.code, "not_found");
    assert.equal((await scrape(t.httpUrl, "anything")).status, 404);
  } finally {
    await t.close();
  }
});

Deno.test("on a shared port with metrics.token, /metrics needs that bearer token: missing or wrong is 401", async () => {
  const { t, admin } = await adminSession({ metrics: { token: "scrape-me-please" } });
  try {
    assert.equal((await scrape(t.httpUrl)).status, 401);
    assert.equal((await scrape(t.httpUrl, "scrape-me-not")).status, 401);
    const withCookie = await fetch(`${t.httpUrl}/metrics`, { headers: { Cookie: admin.cookie! } });
    await withCookie.body?.cancel();
    assert.equal(withCookie.status, 401, "the admin session does not open /metrics");
    const ok = await scrape(t.httpUrl, "scrape-me-please");
    assert.equal(ok.status, 200);
    for (
      const name of [
        "nixmsg_info",
        "nixmsg_connections",
        "nixmsg_endpoints",
        "nixmsg_pending_deliveries",
        "nixmsg_scheduled_messages",
        "nixmsg_due_push_latency_seconds",
        "nixmsg_ack_latency_seconds",
        "nixmsg_writer_queue_length",
        "nixmsg_writer_commit_duration_seconds",
        "nixmsg_password_hash_queue",
        "nixmsg_errors_total",
        "nixmsg_http_requests_total",
      ]
    ) {
      assert.match(ok.text, new RegExp(`# TYPE ${name} `), name);
    }
  } finally {
    await t.close();
  }
});

Deno.test("with admin_listen set, /metrics is served there without auth and is 404 on listen, like the admin API", async () => {
  const t = await startAdminServer({
    admin_listen: "127.0.0.1:0",
    metrics: { token: "unused-here" },
  });
  try {
    assert.notEqual(t.adminUrl, t.httpUrl);
    const r = await scrape(t.adminUrl);
    assert.equal(r.status, 200);
    assert.match(r.text, /nixmsg_info\{version="0\.1\.0"\} 1/);
    assert.equal((await scrape(t.httpUrl, "unused-here")).status, 404);
    const onListen = await new AdminClient(t.httpUrl).get("/api/admin/me");
    assert.equal(onListen.status, 404, "spec 4.3: admin paths are 404 on listen");
    const onAdmin = await new AdminClient(t.adminUrl).get("/api/admin/me");
    assert.equal(onAdmin.status, 401);
  } finally {
    await t.close();
  }
});

Deno.test("metrics move with traffic: endpoints, connections, commits, messages, push latency and error counts", async () => {
  const { t, admin } = await adminSession({ admin_listen: "127.0.0.1:0" });
  try {
    const before = (await scrape(t.adminUrl)).text;
    const unauthorized = 'nixmsg_errors_total{code="unauthorized"}';
    for (let i = 0; i < 3; i++) {
      assert.equal((await new AdminClient(t.adminUrl).get("/api/admin/me")).status, 401);
    }
    for (const id of ["m1", "m2"]) {
      await admin.post("/api/admin/endpoints", { id, login_password: "device-password-1" });
    }
    const a = await online(t.wsUrl, "m1", "device-password-1");
    const b = await online(t.tcpUrl, "m2", "device-password-1");
    await a.client.request({
      type: "send",
      id: "k1",
      to: { kind: "endpoint", id: "m2" },
      body: { enc: "utf8", data: "hello" },
      delay_ms: 0,
    });
    await b.client.waitFrame((f) => f.type === "msg" && f.id === "k1");
    await b.client.request({ type: "ack", from: "m1", id: "k1" });
    await a.client.request({
      type: "send",
      id: "k2",
      to: { kind: "endpoint", id: "m2" },
      body: { enc: "utf8", data: "later" },
      delay_ms: 600_000,
    });
    const after = (await scrape(t.adminUrl)).text;
    assert.equal(sample(after, unauthorized) - sample(before, unauthorized), 3);
    assert.equal(sample(after, "nixmsg_endpoints"), 2);
    assert.equal(sample(after, 'nixmsg_connections{transport="ws"}'), 1);
    assert.equal(sample(after, 'nixmsg_connections{transport="tcp"}'), 1);
    assert.equal(sample(after, "nixmsg_scheduled_messages"), 1);
    assert.equal(sample(after, "nixmsg_pending_deliveries"), 0);
    const commits = 'nixmsg_writer_commits_total{result="ok"}';
    assert.ok(sample(after, commits) > sample(before, commits), "commits counted");
    assert.ok(sample(after, "nixmsg_writer_commit_duration_seconds_count") > 0);
    const pushes = "nixmsg_due_push_latency_seconds_count";
    assert.ok(sample(after, pushes) > sample(before, pushes), "the push was observed");
    const admin2xx = 'nixmsg_http_requests_total{scope="admin",status="2xx"}';
    assert.ok(sample(after, admin2xx) > sample(before, admin2xx));
    assert.ok(
      !after.includes("m1") && !after.includes("k1") && !after.includes("hello"),
      "spec 4.3: no ids or bodies",
    );
    await a.client.close();
    await b.client.close();
  } finally {
    await t.close();
  }
});
