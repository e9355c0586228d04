// Lockouts under concurrent attempts (issue 18 item 2, spec 5 锁定). The server's argon2 checks
// wait at a gate (tests/helpers/gated_pool.ts), so every check it starts is in flight at once.
// A burst of wrong secrets must start no more checks than the rule still allows; the rest are
// refused at once, and the right secret sent after the threshold is refused too.
import assert from "node:assert/strict";
import type { IClientOptions } from "mqtt";
import { online, type TestClient } from "./helpers/client.ts";
import { TestClient as Client } from "./helpers/client.ts";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "./helpers/admin.ts";
import { GatedPool } from "./helpers/gated_pool.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";
const TALK = "open-sesame";
const NOT_AUTHORIZED = 0x86;
const PROXIED = { trusted_proxies: ["127.0.0.1/32"] };

/** Client options that make the server see `ip` as the source (through the trusted proxy). */
function from(ip: string): Partial<IClientOptions> {
  return { wsOptions: { headers: { "X-Forwarded-For": ip } } };
}

/** Collects the results of `promises` as they settle, poking `pool` so waits re-check. */
function track<T>(pool: GatedPool, promises: Promise<T>[]): T[] {
  const out: T[] = [];
  for (const p of promises) {
    p.then((v) => {
      out.push(v);
      pool.poke();
    }, () => pool.poke());
  }
  return out;
}

/**
 * Waits until `threshold` checks are held at the gate and every other attempt was answered,
 * failing at once when more than `threshold` checks start.
 */
async function holdThreshold<T>(
  pool: GatedPool,
  base: number,
  threshold: number,
  answered: T[],
  refusals: number,
): Promise<void> {
  await pool.until(
    () =>
      pool.entered - base > threshold || (pool.entered - base >= threshold &&
        answered.length >= refusals),
    `${threshold} checks held and ${refusals} refusals`,
  );
  assert.equal(pool.entered - base, threshold, "no more checks start than the rule allows");
}

async function connackCode(c: TestClient): Promise<number | null> {
  const code = c.connack?.reasonCode ?? null;
  await c.close();
  return code;
}

Deno.test("sixty concurrent wrong admin logins from one IP start only ten argon2 checks, and the right password sent next is refused", async () => {
  const pool = new GatedPool();
  const t = await startAdminServer({}, { pool });
  try {
    const c = new AdminClient(t.adminUrl);
    const base = pool.entered;
    const verified = pool.verifications;
    pool.close();
    const burst = Array.from(
      { length: 60 },
      (_, i) => c.post("/api/admin/login", { username: "admin", password: `wrong-${i}` }),
    );
    const answered = track(pool, burst);
    await holdThreshold(pool, base, 10, answered, 50);
    assert.ok(answered.every((r) => r.status === 429 && r.code === "rate_limited"));
    const right = await c.post("/api/admin/login", { username: "admin", password: ADMIN_PASSWORD });
    assert.equal(right.status, 429, "the right password after the threshold is refused");
    assert.equal(pool.entered - base, 10, "and not checked");
    pool.open();
    const all = await Promise.all(burst);
    assert.equal(all.filter((r) => r.status === 401).length, 10);
    assert.equal(all.filter((r) => r.status === 429).length, 50);
    assert.equal(pool.verifications - verified, 10, "ten argon2 verifications ran");
    const later = await c.post("/api/admin/login", { username: "admin", password: ADMIN_PASSWORD });
    assert.equal(later.status, 429, "the ten failures locked the IP");
    assert.ok(Number(later.headers.get("retry-after")) > 0);
  } finally {
    await t.close();
  }
});

Deno.test("sixty concurrent wrong MQTT CONNECTs for one endpoint from one IP start only ten checks; the right password sent next gets 0x86, another IP gets in", async () => {
  const pool = new GatedPool();
  const t = await startTestServer(PROXIED, { pool });
  try {
    await t.createEndpoint("dev1", PW);
    const base = pool.entered;
    const verified = pool.verifications;
    pool.close();
    const burst = Array.from(
      { length: 60 },
      (_, i) => Client.connect(t.wsUrl, "dev1", `wrong-${i}`, from("203.0.113.7")),
    );
    const answered = track(pool, burst);
    await holdThreshold(pool, base, 10, answered, 50);
    assert.ok(answered.every((c) => c.connack?.reasonCode === NOT_AUTHORIZED));
    const right = await Client.connect(t.wsUrl, "dev1", PW, from("203.0.113.7"));
    assert.equal(await connackCode(right), NOT_AUTHORIZED, "the right password is refused");
    assert.equal(pool.entered - base, 10, "and not checked");
    pool.open();
    const codes = await Promise.all((await Promise.all(burst)).map(connackCode));
    assert.ok(codes.every((code) => code === NOT_AUTHORIZED));
    assert.equal(pool.verifications - verified, 10, "ten argon2 verifications ran");
    const other = await online(t.wsUrl, "dev1", PW, from("203.0.113.8"));
    assert.ok(other.token, "another IP still logs in with the password");
    await other.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("120 concurrent wrong MQTT CONNECTs for one endpoint from 120 IPs start only fifty checks, then the endpoint's password login is paused", async () => {
  const pool = new GatedPool();
  const t = await startTestServer(PROXIED, { pool });
  try {
    await t.createEndpoint("dev1", PW);
    const device = await online(t.wsUrl, "dev1", PW, from("192.0.2.200"));
    await device.client.close();
    const base = pool.entered;
    const verified = pool.verifications;
    pool.close();
    const burst = Array.from(
      { length: 120 },
      (_, i) => Client.connect(t.wsUrl, "dev1", `wrong-${i}`, from(`10.7.${i}.1`)),
    );
    const answered = track(pool, burst);
    await holdThreshold(pool, base, 50, answered, 70);
    const right = await Client.connect(t.wsUrl, "dev1", PW, from("192.0.2.9"));
    assert.equal(await connackCode(right), NOT_AUTHORIZED, "a fresh IP with the right password");
    pool.open();
    const codes = await Promise.all((await Promise.all(burst)).map(connackCode));
    assert.ok(codes.every((code) => code === NOT_AUTHORIZED));
    assert.equal(pool.verifications - verified, 50, "fifty argon2 verifications ran");
    const paused = await Client.connect(t.wsUrl, "dev1", PW, from("192.0.2.10"));
    assert.equal(await connackCode(paused), NOT_AUTHORIZED, "password login is paused");
    // spec 5: the pause never stops a session token.
    const back = await online(t.wsUrl, "dev1", device.token!, from("192.0.2.11"));
    await back.client.close();
  } finally {
    await t.close();
  }
});

async function connectAll(t: TestServer, ids: readonly string[]): Promise<TestClient[]> {
  for (const id of ids) await t.createEndpoint(id, PW);
  const out: TestClient[] = [];
  for (let i = 0; i < ids.length; i += 10) {
    const batch = ids.slice(i, i + 10).map((id) => online(t.wsUrl, id, PW));
    out.push(...(await Promise.all(batch)).map((o) => o.client));
  }
  return out;
}

const errorCode = (f: Record<string, unknown>) =>
  (f.error as Record<string, unknown> | undefined)?.code;

Deno.test("sixty senders guessing one target's talk password at once start only fifty checks, and the right password sent next is rate_limited", async () => {
  const pool = new GatedPool();
  const t = await startTestServer({}, { pool });
  const clients: TestClient[] = [];
  try {
    const ids = ["target", "honest", ...Array.from({ length: 60 }, (_, i) => `s${i}`)];
    clients.push(...await connectAll(t, ids));
    const [target, honest, ...guessers] = clients;
    const set = await target.request({ type: "self.talk_password", talk_password: TALK });
    assert.equal(set.ok, true);
    const base = pool.entered;
    const verified = pool.verifications;
    pool.close();
    const burst = guessers.map((g, i) =>
      g.request({ type: "unlock", endpoint_id: "target", talk_password: `wrong-${i}` })
    );
    const answered = track(pool, burst);
    await holdThreshold(pool, base, 50, answered, 10);
    assert.ok(answered.every((f) => errorCode(f) === "rate_limited"));
    const right = await honest.request({
      type: "unlock",
      endpoint_id: "target",
      talk_password: TALK,
    });
    assert.equal(errorCode(right), "rate_limited", "the right password is refused");
    pool.open();
    const all = await Promise.all(burst);
    assert.equal(all.filter((f) => errorCode(f) === "talk_password_invalid").length, 50);
    assert.equal(all.filter((f) => errorCode(f) === "rate_limited").length, 10);
    assert.equal(pool.verifications - verified, 50, "fifty argon2 verifications ran");
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});

Deno.test("forty concurrent wrong registration codes from one IP are checked ten times, and the right code sent next gets 429", async () => {
  const t = await startTestServer();
  try {
    await t.setSetting("registration_enabled", "true");
    await t.setSetting("registration_code", "the-right-code-16");
    const register = (code: string) =>
      fetch(`${t.httpUrl}/api/client/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ registration_code: code, name: "dev" }),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    const all = await Promise.all(Array.from({ length: 40 }, (_, i) => register(`wrong-${i}`)));
    const invalid = all.filter((r) => r.body.error?.code === "registration_code_invalid");
    assert.equal(invalid.length, 10);
    assert.equal(all.filter((r) => r.status === 429).length, 30);
    const right = await register("the-right-code-16");
    assert.equal(right.status, 429);
    assert.equal(right.body.error.code, "rate_limited");
  } finally {
    await t.close();
  }
});
