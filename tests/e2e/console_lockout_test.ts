// The admin account lockout in a real browser (issue 28 "Done when"): wrong admin passwords from
// many addresses lock the account, and a console session opened before sees the lock on the
// 运行参数 page and the lock's start on the 操作日志 page.
import assert from "node:assert/strict";
import { makeTestHome, runCli, startServerProcess } from "../helpers/server_process.ts";
import { fetchHttp } from "../../server/net/_test_util.ts";
import {
  CHROMIUM,
  ensureBuilt,
  HAS_CHROMIUM,
  launch,
  openMenu,
  shot,
  SHOTS,
} from "../helpers/browser.ts";

if (!HAS_CHROMIUM) {
  console.warn(`SKIPPED tests/e2e/console_lockout_test.ts: ${CHROMIUM} is missing`);
}

Deno.test({
  name:
    "a locked admin account shows on the settings page and in the audit log of a session opened before",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    // Addresses come through the trusted proxy's X-Forwarded-For, as behind a reverse proxy.
    const home = await makeTestHome({ trusted_proxies: ["127.0.0.1/32"] });
    const { context, dir } = await launch();
    try {
      assert.equal((await runCli(home, ["admin", "init"])).code, 0);
      const password = "console-lockout-pass-1";
      const set = await runCli(home, ["admin", "set-password"], `${password}\n`);
      assert.equal(set.code, 0, set.stderr);
      const server = await startServerProcess(home);
      try {
        const base = `http://${server.addr}`;
        const page = context.pages()[0] ?? await context.newPage();
        const problems: string[] = [];
        page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
        await page.goto(`${base}/login`);
        await page.getByPlaceholder("管理员密码").fill(password);
        await page.getByRole("button", { name: "登录" }).click();
        await page.locator("#page-header h1").waitFor();

        // One wrong guess from each of many addresses, until the account rule answers 429.
        let refused = 0;
        let checked = 0;
        for (let i = 1; i <= 100 && refused === 0; i++) {
          const r = await fetchHttp(server.port, "/api/admin/login", {
            method: "POST",
            headers: {
              "Content-Type": "application/json",
              "X-Forwarded-For": `203.0.113.${i}`,
              "X-Nixmsg-Request": "1",
            },
            body: JSON.stringify({ username: "admin", password: `wrong-${i}` }),
          });
          if (r.status === 401) checked++;
          else if (r.status === 429) refused++;
          else assert.fail(`unexpected ${r.status}: ${r.text}`);
        }
        assert.equal(refused, 1, `the account never locked after ${checked} wrong passwords`);

        await openMenu(page, "运行参数");
        await page.getByText("管理员账号已锁定").waitFor({ timeout: 10_000 });
        await shot(page, "lockout-settings");

        await openMenu(page, "操作日志");
        const lock = page.locator(".n-data-table-tbody .n-data-table-tr", { hasText: "开始锁定" })
          .filter({ hasText: "account" });
        await lock.first().waitFor({ timeout: 10_000 });
        assert.match(
          await lock.first().innerText(),
          /系统/,
          "the lock is recorded as the system's",
        );
        assert.deepEqual(problems, []);
      } finally {
        await server.stop();
      }
    } finally {
      await context.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await home.cleanup();
    }
  },
});
