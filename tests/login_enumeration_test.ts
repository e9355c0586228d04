// Endpoint ids must not be enumerable by timing (issue 18 item 3): a password login for an
// unknown or disabled id runs the same argon2 check as a wrong password for a real one, against
// a fixed dummy hash with the same parameters. The server's own pool counts the checks.
import assert from "node:assert/strict";
import { TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "./helpers/admin.ts";

const PW = "device-password-1";

Deno.test("a wrong password for a known, an unknown or a disabled id runs exactly one argon2 check each, and all get 0x86", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("known1", PW);
    await t.createEndpoint("off1", PW, { enabled: false });
    const pool = t.server.app.pool;
    const checks: Record<string, number> = {};
    for (const [id, pw] of [["known1", "wrong-pw"], ["nobody", PW], ["off1", PW]]) {
      for (const url of [t.wsUrl, t.tcpUrl]) {
        const before = pool.verifications;
        const c = await TestClient.connect(url, id, pw);
        assert.equal(c.connack?.reasonCode, 0x86, id);
        await c.close();
        checks[`${id} ${url.slice(0, 2)}`] = pool.verifications - before;
      }
    }
    assert.deepEqual(checks, {
      "known1 ws": 1,
      "known1 mq": 1,
      "nobody ws": 1,
      "nobody mq": 1,
      "off1 ws": 1,
      "off1 mq": 1,
    });
    // The dummy hash costs what a real one costs: same algorithm and parameters.
    const dummy = await pool.dummyHash();
    assert.equal(pool.needsRehash(dummy), false);
  } finally {
    await t.close();
  }
});

Deno.test("an admin login with a wrong username runs the argon2 check like a wrong password", async () => {
  const t = await startAdminServer();
  try {
    const pool = t.server.app.pool;
    const c = new AdminClient(t.adminUrl);
    for (const [username, password] of [["root", ADMIN_PASSWORD], ["admin", "wrong-password"]]) {
      const before = pool.verifications;
      const r = await c.post("/api/admin/login", { username, password });
      assert.equal(r.status, 401);
      assert.equal(pool.verifications - before, 1, username);
    }
  } finally {
    await t.close();
  }
});
