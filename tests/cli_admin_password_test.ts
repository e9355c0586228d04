// `nixmsg admin set-password` (issue 18 item 4, spec 8): it ends every admin web session, as the
// API's password change does, even while the server runs; and it counts characters as code
// points, like the API, so 6 emoji are 6 characters, not 12.
import assert from "node:assert/strict";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { AdminClient } from "./helpers/admin.ts";

const SIX_EMOJI = "😀".repeat(6); // 12 UTF-16 units, 6 characters
const TWELVE_EMOJI = "😀".repeat(12);

Deno.test("admin set-password on a running server ends every admin session and the old password; 6 emoji are refused by the CLI and the API alike", async () => {
  const home = await makeTestHome();
  try {
    const init = await runCli(home, ["admin", "init"]);
    assert.equal(init.code, 0, init.stderr);
    const old = init.stdout.match(/password: (\S+)/)![1];
    const server = await startServerProcess(home);
    try {
      const base = `http://${server.addr}`;
      const a = new AdminClient(base);
      const b = new AdminClient(base);
      await a.login(old);
      await b.login(old);
      assert.equal((await a.get("/api/admin/me")).status, 200);

      const short = await runCli(home, ["admin", "set-password"], `${SIX_EMOJI}\n`);
      assert.equal(short.code, 1);
      assert.match(short.stderr, /at least 12/);
      const api = await a.post("/api/admin/password", {
        old_password: old,
        new_password: SIX_EMOJI,
      });
      assert.equal(api.status, 400, "the API counts the same way");
      assert.equal((await a.get("/api/admin/me")).status, 200, "a refused change ends nothing");

      const changed = await runCli(home, ["admin", "set-password"], `${TWELVE_EMOJI}\n`);
      assert.equal(changed.code, 0, changed.stderr);
      assert.match(changed.stdout, /sessions ended: 2/);
      assert.doesNotMatch(changed.stdout + changed.stderr, /😀/);
      for (const c of [a, b]) {
        const me = await c.get("/api/admin/me");
        assert.equal(me.status, 401, "the session ended at once");
      }
      const stale = await new AdminClient(base).post("/api/admin/login", {
        username: "admin",
        password: old,
      });
      assert.equal(stale.status, 401, "the old password no longer works");
      const fresh = new AdminClient(base);
      await fresh.login(TWELVE_EMOJI);
      assert.equal((await fresh.get("/api/admin/me")).status, 200);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
  }
});
