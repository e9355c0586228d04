import assert from "node:assert/strict";
import { online, TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";

Deno.test("password login gets a session token; a token reconnect gets none; a second password login takes over with 0x8E and kills the old token", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const first = await online(t.wsUrl, "dev1", PW);
    assert.match(first.token ?? "", /^nst_[A-Za-z0-9_-]{43}$/);
    await first.client.close();

    const again = await online(t.wsUrl, "dev1", first.token!);
    assert.equal(again.token, null, "a token login must not issue a new token");

    const other = await online(t.tcpUrl, "dev1", PW);
    assert.ok(other.token && other.token !== first.token);
    await again.client.until(() => again.client.disconnectPacket !== null, "takeover DISCONNECT");
    assert.equal(again.client.disconnectPacket?.reasonCode, 0x8e);
    await again.client.close();

    const stale = await TestClient.connect(t.wsUrl, "dev1", first.token!);
    assert.equal(stale.connack?.reasonCode, 0x86, "the old token is dead after a password login");
    await stale.close();
    await other.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("unknown, disabled and wrong credentials are refused with 0x86 (3.1.1: return code 4)", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("ok1", PW);
    await t.createEndpoint("off1", PW, { enabled: false });
    for (
      const [id, pw] of [["nobody", PW], ["off1", PW], ["ok1", "wrong-password"], [
        "ok1",
        "nst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      ]]
    ) {
      const c = await TestClient.connect(t.wsUrl, id, pw);
      assert.equal(c.connack?.reasonCode, 0x86, `${id}/${pw.slice(0, 4)}`);
      await c.close();
    }
    const v4 = await TestClient.connect(t.tcpUrl, "ok1", "wrong-password", {
      protocolVersion: 4,
      properties: undefined,
    });
    assert.equal(v4.connack?.reasonCode, 4);
    await v4.close();
  } finally {
    await t.close();
  }
});

Deno.test("an MQTT 3.1.1 client can log in and handshake", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("old1", PW);
    const { client, token } = await online(t.tcpUrl, "old1", PW, {
      protocolVersion: 4,
      properties: undefined,
    });
    assert.ok(token);
    const self = await client.request({ type: "self.get" });
    assert.equal(self.ok, true);
    assert.equal((self.data as Record<string, unknown>).id, "old1");
    await client.close();
  } finally {
    await t.close();
  }
});

Deno.test("a login password hashed with outdated argon2 parameters is re-hashed after a successful login", async () => {
  const { PasswordPool } = await import("../server/auth/password_pool.ts");
  const t = await startTestServer();
  try {
    const old = await new PasswordPool({ params: { memoryCost: 512, timeCost: 1 } }).hash(PW);
    await t.server.store.run("endpoint.create", {
      id: "legacy",
      name: "",
      remark: "",
      source: "admin",
      loginHash: old,
      talkHash: null,
      defaultDelayMs: 0,
    });
    const { client } = await online(t.wsUrl, "legacy", PW);
    const row = t.reader.prepare("SELECT login_hash FROM endpoints WHERE id = ?")
      .get("legacy") as { login_hash: string };
    assert.notEqual(row.login_hash, old);
    assert.match(row.login_hash, /m=1024,t=1,p=1/);
    await client.close();
    const again = await online(t.wsUrl, "legacy", PW);
    assert.ok(again.token, "the re-hashed password still logs in");
    await again.client.close();
  } finally {
    await t.close();
  }
});
