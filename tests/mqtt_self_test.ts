// Self service over the real server (spec 6.6), the session token life cycle it drives (spec 5
// 登录与会话令牌, spec 13 会话令牌), and a login over TLS (spec 4.2).
import assert from "node:assert/strict";
import { type Frame, online, TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { HAS_OPENSSL, makeCert } from "../server/net/_test_util.ts";

const PW = "device-password-1";
const NEW_PW = "device-password-2";
const NOT_AUTHORIZED = 0x86;
const TOKEN = /^nst_[A-Za-z0-9_-]{43}$/;

const codeOf = (f: Frame) => (f.error as { code?: string } | undefined)?.code;

/** The CONNACK reason code of one login attempt (the connection is closed afterwards). */
async function connackOf(url: string, id: string, pw: string): Promise<number | null> {
  const c = await TestClient.connect(url, id, pw);
  const code = c.connack?.reasonCode ?? null;
  await c.close();
  return code;
}

Deno.test("self.get returns the own profile and self.update changes the name and the default delay within max_schedule_seconds", async () => {
  const t = await startTestServer({ limits: { max_schedule_seconds: 3600 } });
  try {
    await t.createEndpoint("dev1", PW);
    const { client } = await online(t.wsUrl, "dev1", PW);
    const before = Date.now();
    const got = await client.request({ type: "self.get" });
    assert.equal(got.ok, true);
    const data = got.data as Record<string, unknown>;
    assert.deepEqual({ ...data, created_at_ms: 0 }, {
      id: "dev1",
      name: "dev1",
      source: "admin",
      default_delay_ms: 0,
      talk_password_set: false,
      created_at_ms: 0,
    });
    assert.ok(typeof data.created_at_ms === "number" && data.created_at_ms <= before);

    const updated = await client.request({
      type: "self.update",
      name: "门口😀",
      default_delay_ms: 3_600_000,
    });
    assert.deepEqual([updated.ok, updated.data], [true, {}]);
    // Fields left out stay as they are.
    assert.equal((await client.request({ type: "self.update", default_delay_ms: 5000 })).ok, true);
    const after = (await client.request({ type: "self.get" })).data as Record<string, unknown>;
    assert.equal(after.name, "门口😀");
    assert.equal(after.default_delay_ms, 5000);

    for (
      const [what, fields] of [
        ["delay over max_schedule_seconds", { default_delay_ms: 3_600_001 }],
        ["negative delay", { default_delay_ms: -1 }],
        ["name over 64 characters", { name: "n".repeat(65) }],
      ] as const
    ) {
      const bad = await client.request({ type: "self.update", ...fields });
      assert.equal(codeOf(bad), "bad_request", what);
    }
    const unchanged = (await client.request({ type: "self.get" })).data as Record<string, unknown>;
    assert.deepEqual([unchanged.name, unchanged.default_delay_ms], ["门口😀", 5000]);
    await client.close();

    // The change is stored, not kept on the connection.
    const again = await online(t.tcpUrl, "dev1", PW);
    const stored = (await again.client.request({ type: "self.get" })).data as { name: string };
    assert.equal(stored.name, "门口😀");
    await again.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("self.login_password returns a new token, kills the old one and the old password, and keeps the connection", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const { client, token: oldToken } = await online(t.wsUrl, "dev1", PW);
    const wrong = await client.request({
      type: "self.login_password",
      old_password: "not-the-password",
      new_password: NEW_PW,
    });
    assert.equal(codeOf(wrong), "unauthorized");
    const resp = await client.request({
      type: "self.login_password",
      old_password: PW,
      new_password: NEW_PW,
    });
    assert.equal(resp.ok, true);
    const newToken = (resp.data as { session_token: string }).session_token;
    assert.match(newToken, TOKEN);
    assert.notEqual(newToken, oldToken);
    assert.equal((await client.request({ type: "self.get" })).ok, true, "the connection stays");

    // Refused logins do not disturb the connection.
    assert.equal(await connackOf(t.tcpUrl, "dev1", oldToken!), NOT_AUTHORIZED, "old token");
    assert.equal(await connackOf(t.tcpUrl, "dev1", PW), NOT_AUTHORIZED, "old password");
    assert.equal(client.connected, true);
    assert.equal((await client.request({ type: "self.get" })).ok, true);

    // The new token logs in (and, as any login, takes the endpoint over: 0x8E).
    const byToken = await online(t.tcpUrl, "dev1", newToken);
    assert.equal(byToken.token, null);
    assert.equal(await client.closedWith("the takeover"), 0x8e);
    await client.close();
    await byToken.client.close();
    const byPassword = await online(t.wsUrl, "dev1", NEW_PW);
    assert.match(byPassword.token ?? "", TOKEN);
    await byPassword.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("a new login password starting with nst_ or shorter than 8 characters is bad_request and changes nothing", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const { client, token } = await online(t.wsUrl, "dev1", PW);
    for (const newPassword of ["nst_looks-like-a-token", "short"]) {
      const resp = await client.request({
        type: "self.login_password",
        old_password: PW,
        new_password: newPassword,
      });
      assert.equal(codeOf(resp), "bad_request", newPassword);
    }
    await client.close();
    const back = await online(t.tcpUrl, "dev1", token!);
    assert.equal(back.token, null, "the token still works");
    await back.client.close();
    const byPassword = await online(t.tcpUrl, "dev1", PW);
    await byPassword.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("self.logout answers, then closes the connection, and the token is dead while the password still works", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const { client, token } = await online(t.tcpUrl, "dev1", PW);
    const resp = await client.request({ type: "self.logout" });
    assert.deepEqual([resp.ok, resp.data], [true, {}]);
    await client.until(() => client.closed, "the server to close the connection");
    await client.close();
    assert.equal(await connackOf(t.wsUrl, "dev1", token!), NOT_AUTHORIZED);
    assert.equal(await connackOf(t.tcpUrl, "dev1", token!), NOT_AUTHORIZED);
    const again = await online(t.wsUrl, "dev1", PW);
    assert.ok(again.token && again.token !== token, "a password login issues a fresh token");
    await again.client.close();
  } finally {
    await t.close();
  }
});

Deno.test({
  name: "a device logs in and handshakes over mqtts:// and wss:// with a self-signed certificate",
  ignore: !HAS_OPENSSL,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-tls-" });
    const cert = await makeCert(dir, "server");
    const t = await startTestServer({
      tls: { cert_file: cert.certFile, key_file: cert.keyFile },
    });
    try {
      await t.createEndpoint("dev1", PW);
      const tls = { rejectUnauthorized: false };
      const tcp = await online(`mqtts://127.0.0.1:${t.port}`, "dev1", PW, tls);
      assert.match(tcp.token ?? "", TOKEN);
      assert.equal((await tcp.client.request({ type: "self.get" })).ok, true);
      await tcp.client.close();
      const ws = await online(`wss://127.0.0.1:${t.port}/mqtt`, "dev1", tcp.token!, {
        ...tls,
        wsOptions: tls,
      });
      assert.equal(ws.token, null);
      assert.equal((await ws.client.request({ type: "self.get" })).ok, true);
      await ws.client.close();
      // Without allow_plaintext, a plaintext login is not accepted (spec 4.2).
      const plain = await TestClient.connect(t.tcpUrl, "dev1", PW, { connectTimeout: 3000 });
      assert.equal(plain.connected, false);
      await plain.close();
    } finally {
      await t.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
