// Login lockouts over the real server (spec 5 锁定, spec 13 锁定). Source IPs are simulated the way
// spec 13 suggests: the server trusts 127.0.0.1 as a proxy, and each WebSocket carries its own
// X-Forwarded-For (spec 4.5).
import assert from "node:assert/strict";
import type { IClientOptions } from "mqtt";
import { online, TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";
const WRONG = "wrong-password-9";
const NOT_AUTHORIZED = 0x86;
const PROXIED = { trusted_proxies: ["127.0.0.1/32"] };

/** Client options that make the server see `ip` as the source (through the trusted proxy). */
function from(ip: string): Partial<IClientOptions> {
  return { wsOptions: { headers: { "X-Forwarded-For": ip } } };
}

/** One password CONNECT over WebSocket from `ip`; returns the CONNACK reason code (or null). */
async function attempt(t: TestServer, id: string, pw: string, ip: string): Promise<number | null> {
  const c = await TestClient.connect(t.wsUrl, id, pw, from(ip));
  const code = c.connack?.reasonCode ?? null;
  await c.close();
  return code;
}

Deno.test("ten wrong passwords from one IP lock that endpoint and IP, so the right password is refused with 0x86, while another IP still logs in", async () => {
  const t = await startTestServer(PROXIED);
  try {
    await t.createEndpoint("dev1", PW);
    for (let i = 1; i <= 10; i++) {
      assert.equal(await attempt(t, "dev1", WRONG, "203.0.113.7"), NOT_AUTHORIZED, `guess ${i}`);
    }
    assert.equal(
      await attempt(t, "dev1", PW, "203.0.113.7"),
      NOT_AUTHORIZED,
      "the locked pair is refused even with the right password",
    );
    const other = await online(t.wsUrl, "dev1", PW, from("203.0.113.8"));
    assert.ok(other.token, "a different IP logs in with the password");
    await other.client.close();
    // The proxy's own address is a third source, also unaffected.
    const direct = await online(t.tcpUrl, "dev1", PW);
    assert.ok(direct.token);
    await direct.client.close();
    assert.equal(await attempt(t, "dev1", PW, "203.0.113.7"), NOT_AUTHORIZED, "still locked");
  } finally {
    await t.close();
  }
});

Deno.test("X-Forwarded-For from an untrusted peer is ignored, so changing it does not escape the lock", async () => {
  const t = await startTestServer(); // no trusted_proxies (spec 4.5: other sources ignore XFF)
  try {
    await t.createEndpoint("dev1", PW);
    for (let i = 1; i <= 10; i++) {
      assert.equal(await attempt(t, "dev1", WRONG, `198.51.100.${i}`), NOT_AUTHORIZED);
    }
    assert.equal(await attempt(t, "dev1", PW, "198.51.100.99"), NOT_AUTHORIZED);
    const tcp = await TestClient.connect(t.tcpUrl, "dev1", PW);
    assert.equal(tcp.connack?.reasonCode, NOT_AUTHORIZED, "127.0.0.1 itself is the locked source");
    await tcp.close();
  } finally {
    await t.close();
  }
});

Deno.test("many IPs guessing one endpoint trip the per-endpoint lock at the 50th failure, after which a new IP is refused but a token reconnect still works", async () => {
  const t = await startTestServer(PROXIED);
  try {
    await t.createEndpoint("dev1", PW);
    // 49 failures from 7 IPs, 7 each: under the per-pair limit of 10, under the total of 50.
    const ips = Array.from({ length: 7 }, (_, i) => `203.0.113.${10 + i}`);
    await Promise.all(ips.map(async (ip) => {
      for (let i = 0; i < 7; i++) {
        assert.equal(await attempt(t, "dev1", WRONG, ip), NOT_AUTHORIZED);
      }
    }));
    // 49 < 50: a fresh IP with the right password still gets in, and keeps its token.
    const device = await online(t.wsUrl, "dev1", PW, from("192.0.2.1"));
    assert.ok(device.token);
    await device.client.close();
    // The 50th failure, from yet another IP, stops password login for the endpoint.
    assert.equal(await attempt(t, "dev1", WRONG, "203.0.113.50"), NOT_AUTHORIZED);
    assert.equal(await attempt(t, "dev1", PW, "203.0.113.51"), NOT_AUTHORIZED, "new IP, refused");
    const tcp = await TestClient.connect(t.tcpUrl, "dev1", PW);
    assert.equal(tcp.connack?.reasonCode, NOT_AUTHORIZED, "and over TCP");
    await tcp.close();

    // spec 5: the lockouts never stop a session token, from any IP or transport.
    for (const [url, opts] of [[t.wsUrl, from("203.0.113.60")], [t.tcpUrl, {}]] as const) {
      const back = await online(url, "dev1", device.token!, opts);
      assert.equal(back.token, null);
      const self = await back.client.request({ type: "self.get" });
      assert.equal(self.ok, true);
      await back.client.close();
    }
  } finally {
    await t.close();
  }
});

Deno.test("self.login_password with a wrong old password answers unauthorized and counts toward the login lock of the connection's IP", async () => {
  const t = await startTestServer(PROXIED);
  const ip = "203.0.113.20";
  try {
    await t.createEndpoint("dev1", PW);
    const { client } = await online(t.wsUrl, "dev1", PW, from(ip));
    // 5 wrong CONNECTs and 5 wrong old passwords from the same IP make 10 failures.
    for (let i = 0; i < 5; i++) assert.equal(await attempt(t, "dev1", WRONG, ip), NOT_AUTHORIZED);
    for (let i = 0; i < 5; i++) {
      const resp = await client.request({
        type: "self.login_password",
        old_password: WRONG,
        new_password: "new-password-1",
      });
      assert.equal(resp.ok, false);
      assert.equal((resp.error as { code: string }).code, "unauthorized");
    }
    assert.equal(await attempt(t, "dev1", PW, ip), NOT_AUTHORIZED, "the pair is locked now");
    // While locked, even the right old password is not checked (spec 6.10 rate_limited).
    const locked = await client.request({
      type: "self.login_password",
      old_password: PW,
      new_password: "new-password-1",
    });
    assert.equal((locked.error as { code: string }).code, "rate_limited");
    assert.equal(client.connected, true, "failed attempts do not close the connection");
    await client.close();
    // The password was not changed, and another IP is unaffected.
    const other = await online(t.wsUrl, "dev1", PW, from("203.0.113.21"));
    await other.client.close();
  } finally {
    await t.close();
  }
});
