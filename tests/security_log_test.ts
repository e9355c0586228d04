// Attacks are visible (issue 18 item 5): every failed or refused secret check is logged at info
// with the id, source IP and reason, every lock start and end at warn, and all of them are
// counted in /metrics. No line carries the secret that was tried.
import assert from "node:assert/strict";
import { online, TestClient } from "./helpers/client.ts";
import { AdminClient, adminSession, startAdminServer } from "./helpers/admin.ts";
import type { AdminTestServer } from "./helpers/admin.ts";

const PW = "device-password-1";
const METRICS_TOKEN = "scrape-me-please";
const MINUTE = 60_000;

/** A clock the test moves; the server's lockouts read it. */
class FakeClock {
  now = Date.now();
  read = (): number => this.now;
}

/** The labelled counters of one /metrics scrape, as `name{k="v",…}` (labels sorted) -> value. */
async function scrape(t: AdminTestServer): Promise<Map<string, number>> {
  const res = await fetch(`${t.httpUrl}/metrics`, {
    headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
  });
  assert.equal(res.status, 200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = (m[2] ?? "").split(",").filter((x) => x !== "").sort().join(",");
    out.set(`${m[1]}{${labels}}`, Number(m[3]));
  }
  return out;
}

function delta(before: Map<string, number>, after: Map<string, number>, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0);
}

function lines(t: AdminTestServer, msg: string, fields: Record<string, unknown> = {}) {
  return t.logs.filter((l) =>
    l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v)
  );
}

function assertNoSecret(t: AdminTestServer, secrets: string[]): void {
  const all = JSON.stringify(t.logs);
  for (const s of secrets) assert.ok(!all.includes(s), `a log line carries ${s.slice(0, 6)}…`);
}

Deno.test("wrong API tokens are logged at info with IP and reason; the IP lock they cause is logged at warn when it starts and ends, and counted", async () => {
  const clock = new FakeClock();
  const t = await startAdminServer({ metrics: { token: METRICS_TOKEN } }, { clock: clock.read });
  try {
    const before = await scrape(t);
    const tokens = Array.from({ length: 10 }, (_, i) => `nxm_guessed-token-number-${i}`);
    for (const token of tokens) {
      const r = await new AdminClient(t.adminUrl, token).get("/api/admin/overview");
      assert.equal(r.status, 401);
    }
    const refused = await new AdminClient(t.adminUrl, "nxm_one-more").get("/api/admin/overview");
    assert.equal(refused.status, 429);
    const fails = lines(t, "auth failure", { kind: "admin", ip: "127.0.0.1" });
    assert.deepEqual(fails.map((l) => [l.level, l.reason]), [
      ...Array(10).fill(["info", "wrong_api_token"]),
      ["info", "locked"],
    ]);
    const started = await t.waitLog((l) => l.msg === "lockout started");
    assert.equal(started.level, "warn");
    assert.equal(started.kind, "admin");
    assert.equal(started.rule, "ip");
    assert.equal(started.ip, "127.0.0.1");
    assert.equal(started.until, new Date(clock.now + 5 * MINUTE).toISOString());

    clock.now += 5 * MINUTE;
    // The server looks for ended locks every second; nobody has to ask about this IP.
    const ended = await t.waitLog((l) => l.msg === "lockout ended");
    assert.equal(ended.level, "warn");
    assert.equal(ended.reason, "expired");
    assert.equal(ended.ip, "127.0.0.1");

    const after = await scrape(t);
    const failures = "nixmsg_auth_failures_total";
    assert.equal(delta(before, after, `${failures}{kind="admin",reason="wrong_api_token"}`), 10);
    assert.equal(delta(before, after, `${failures}{kind="admin",reason="locked"}`), 1);
    const lockouts = "nixmsg_lockout_events_total";
    assert.equal(delta(before, after, `${lockouts}{event="start",kind="admin",rule="ip"}`), 1);
    assert.equal(delta(before, after, `${lockouts}{event="end",kind="admin",rule="ip"}`), 1);
    assertNoSecret(t, [...tokens, "nxm_one-more"]);
  } finally {
    await t.close();
  }
});

Deno.test("failed MQTT logins are logged at info with endpoint id, IP and reason; a login lock is logged when it starts and when the admin clears it", async () => {
  const { t, admin } = await adminSession({ metrics: { token: METRICS_TOKEN } });
  try {
    await t.createEndpoint("dev1", PW);
    await t.createEndpoint("off1", PW, { enabled: false });
    const first = await online(t.tcpUrl, "dev1", PW); // now dev1 has a session token
    await first.client.close();
    const before = await scrape(t);
    const tries: [string, string][] = [
      ["nobody", "some-password-1"],
      ["off1", PW],
      ["dev1", "nst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
      ...Array.from({ length: 10 }, (_, i): [string, string] => ["dev1", `wrong-guess-${i}`]),
    ];
    for (const [id, pw] of tries) {
      const c = await TestClient.connect(t.tcpUrl, id, pw);
      assert.equal(c.connack?.reasonCode, 0x86);
      await c.close();
    }
    const seen = lines(t, "auth failure").map((l) => [l.level, l.kind, l.reason, l.endpoint]);
    assert.deepEqual(seen, [
      ["info", "login", "unknown_id", "nobody"],
      ["info", "login", "disabled", "off1"],
      ["info", "session_token", "wrong_token", "dev1"],
      ...Array(10).fill(["info", "login", "wrong_password", "dev1"]),
    ]);
    assert.ok(lines(t, "auth failure").every((l) => l.ip === "127.0.0.1"));
    const started = await t.waitLog((l) => l.msg === "lockout started");
    assert.deepEqual([started.level, started.kind, started.rule, started.endpoint, started.ip], [
      "warn",
      "login",
      "pair",
      "dev1",
      "127.0.0.1",
    ]);
    const right = await TestClient.connect(t.tcpUrl, "dev1", PW);
    assert.equal(right.connack?.reasonCode, 0x86);
    await right.close();
    assert.equal(lines(t, "auth failure", { reason: "locked", endpoint: "dev1" }).length, 1);

    const unlocked = await admin.post("/api/admin/endpoints/dev1/unlock");
    assert.equal(unlocked.status, 200);
    const ended = await t.waitLog((l) => l.msg === "lockout ended");
    assert.deepEqual([ended.level, ended.reason, ended.endpoint], ["warn", "cleared", "dev1"]);
    const back = await online(t.tcpUrl, "dev1", PW);
    await back.client.close();

    const after = await scrape(t);
    const f = "nixmsg_auth_failures_total";
    assert.equal(delta(before, after, `${f}{kind="login",reason="wrong_password"}`), 10);
    assert.equal(delta(before, after, `${f}{kind="login",reason="unknown_id"}`), 1);
    assert.equal(delta(before, after, `${f}{kind="login",reason="locked"}`), 1);
    assert.equal(delta(before, after, `${f}{kind="session_token",reason="wrong_token"}`), 1);
    const l = "nixmsg_lockout_events_total";
    assert.equal(delta(before, after, `${l}{event="start",kind="login",rule="pair"}`), 1);
    assert.equal(delta(before, after, `${l}{event="end",kind="login",rule="pair"}`), 1);
    assert.ok(delta(before, after, "nixmsg_password_verifications_total{}") >= 13);
    assertNoSecret(t, tries.map(([, pw]) => pw));
  } finally {
    await t.close();
  }
});

Deno.test("wrong registration codes, talk passwords and admin passwords are logged with IP or ids and never the secret", async () => {
  const { t } = await adminSession();
  try {
    await t.setSetting("registration_enabled", "true");
    await t.setSetting("registration_code", "the-right-code-16");
    const reg = await fetch(`${t.httpUrl}/api/client/register`, {
      method: "POST",
      body: JSON.stringify({ registration_code: "guessed-code-42", name: "x" }),
    });
    assert.equal(reg.status, 403);
    await reg.body?.cancel();
    const login = await new AdminClient(t.adminUrl).post("/api/admin/login", {
      username: "admin",
      password: "guessed-admin-pw",
    });
    assert.equal(login.status, 401);

    await t.createEndpoint("a", PW);
    await t.createEndpoint("b", PW);
    const a = await online(t.wsUrl, "a", PW);
    const b = await online(t.wsUrl, "b", PW);
    const set = await b.client.request({
      type: "self.talk_password",
      talk_password: "talk-secret",
    });
    assert.equal(set.ok, true);
    const r = await a.client.request({
      type: "unlock",
      endpoint_id: "b",
      talk_password: "guessed-talk-pw",
    });
    assert.equal((r.error as { code: string }).code, "talk_password_invalid");
    await a.client.close();
    await b.client.close();

    const got = lines(t, "auth failure").map((l) => [l.kind, l.reason, l.ip, l.sender, l.target]);
    assert.deepEqual(got, [
      ["registration", "wrong_code", "127.0.0.1", undefined, undefined],
      ["admin", "wrong_password", "127.0.0.1", undefined, undefined],
      ["talk", "wrong_password", undefined, "a", "b"],
    ]);
    assertNoSecret(t, ["guessed-code-42", "the-right-code-16", "guessed-admin-pw", "talk-secret"]);
    assertNoSecret(t, ["guessed-talk-pw", PW]);
  } finally {
    await t.close();
  }
});
