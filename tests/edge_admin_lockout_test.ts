// issue 28 item 3: wrong admin passwords spread over one IPv6 /64, or over many addresses, must
// not all be checked. Addresses come through a trusted proxy's X-Forwarded-For (spec 4.5, 13).
// Over one /64 the network is locked after 10 failures (limits.ipv6_prefix_bits, default 64);
// over many addresses the account is locked after 50 within the hour (per-account rule), even
// for the right password from a fresh address; the lock is logged and shown by the settings API
// that the console's settings page reads. A session opened before keeps working.
import assert from "node:assert/strict";
import { PW } from "./helpers/messaging.ts";
import { runCli, type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { fetchHttp, type TestResponse, waitFor } from "../server/net/_test_util.ts";

const ADMIN_PW = "the-admin-password-1";

function login(server: ServerProcess, from: string, password: string): Promise<TestResponse> {
  return fetchHttp(server.port, "/api/admin/login", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "X-Forwarded-For": from,
      "X-Nixmsg-Request": "1",
    },
    body: JSON.stringify({ username: "admin", password }),
  });
}

Deno.test("100 wrong admin passwords over one /64 lock the /64 after 10; over many addresses they lock the account, which is logged and shown in the settings", async () => {
  const home = await prepareHome({ trusted_proxies: ["127.0.0.1/32"] }, ["a"], PW);
  const set = await runCli(home, ["admin", "set-password"], `${ADMIN_PW}\n`);
  assert.equal(set.code, 0, set.stderr);
  const server = await startServerProcess(home, 60_000, { launcher: true });
  try {
    const first = await login(server, "198.51.100.1", ADMIN_PW);
    assert.equal(first.status, 200, first.text);
    const cookie = String(first.headers["set-cookie"]).split(";")[0];

    // One /64, 100 addresses in it: 10 are checked (401), the other 90 refused unchecked (429).
    const byStatus: Record<number, number> = {};
    for (let i = 1; i <= 100; i++) {
      const r = await login(server, `2001:db8:1:2::${i.toString(16)}`, `wrong-${i}`);
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      if (r.status === 429) assert.ok(Number(r.headers["retry-after"]) > 0);
    }
    assert.deepEqual(byStatus, { 401: 10, 429: 90 });
    const netLock = server.logs.find((l) => l.msg === "lockout started" && l.rule === "ip");
    assert.equal(netLock?.ip, "2001:db8:1:2::/64");
    // The right password from another network still logs in: the account is not locked yet.
    const other = await login(server, "2001:db8:9::1", ADMIN_PW);
    assert.equal(other.status, 200, other.text);

    // Many addresses, one guess each: the account locks once 50 failures are counted in all.
    let checked = 10;
    let lockedAt = 0;
    for (let i = 1; i <= 100 && lockedAt === 0; i++) {
      const r = await login(server, `203.0.113.${i}`, `wrong-again-${i}`);
      if (r.status === 401) checked++;
      else {
        assert.equal(r.status, 429, r.text);
        assert.match(r.text, /管理员账号/);
        lockedAt = i;
      }
    }
    assert.equal(checked, 50, "exactly the account rule's 50 failures were checked");
    const fresh = await login(server, "192.0.2.77", ADMIN_PW);
    assert.equal(fresh.status, 429, "the right password from a fresh address is refused too");
    assert.ok(Number(fresh.headers["retry-after"]) > 3000);
    const accountLock = server.logs.find((l) =>
      l.msg === "lockout started" && l.rule === "account"
    );
    assert.equal(accountLock?.level, "warn");
    assert.equal(accountLock?.account, "admin");

    // The session opened before still works and sees the lock (the console's settings page).
    const settings = await fetchHttp(server.port, "/api/admin/settings", {
      headers: { Cookie: cookie },
    });
    assert.equal(settings.status, 200, settings.text);
    const lock = (settings.json as { data: { admin_lockout: Record<string, number | null> } })
      .data.admin_lockout;
    assert.ok((lock.locked_until ?? 0) > Date.now() + 50 * 60_000, JSON.stringify(lock));
    assert.ok((lock.last_locked_at ?? 0) > 0);

    // Both locks are rows of the audit log (操作日志), the /64 with its network. A lock's row is
    // written through the writer after the lock took effect: wait until two rows are there.
    let rows: string[][] = [];
    const readAudit = async () => {
      const audit = await fetchHttp(server.port, "/api/admin/audit?action=lockout.start", {
        headers: { Cookie: cookie },
      });
      assert.equal(audit.status, 200, audit.text);
      rows = (audit.json as { data: { items: Record<string, string>[] } }).data.items
        .map((r) => [r.actor, r.target, r.result]);
      return rows.length >= 2;
    };
    await waitFor(readAudit, "two lockout rows in the audit log", 10_000).catch(() => {});
    assert.deepEqual(
      rows.sort(),
      [
        ["system", "2001:db8:1:2::/64", "admin/ip"],
        ["system", "admin", "admin/account"],
      ].sort(),
      JSON.stringify(rows),
    );
  } finally {
    assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
});
