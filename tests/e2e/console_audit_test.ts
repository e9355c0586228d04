// 操作日志 in a real browser (issue 32 "Done when"): the page lists an action done a moment ago in
// the console and one done by the CLI next to the running server.
import assert from "node:assert/strict";
import { makeTestHome, runCli, startServerProcess } from "../helpers/server_process.ts";
import {
  CHROMIUM,
  ensureBuilt,
  formItem,
  HAS_CHROMIUM,
  launch,
  modal,
  openMenu,
  shot,
  SHOTS,
} from "../helpers/browser.ts";

if (!HAS_CHROMIUM) {
  console.warn(`SKIPPED tests/e2e/console_audit_test.ts: ${CHROMIUM} is missing`);
}

Deno.test({
  name: "the audit log page lists a console action and a CLI action, and filters by action",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const home = await makeTestHome();
    const { context, dir } = await launch();
    try {
      assert.equal((await runCli(home, ["admin", "init"])).code, 0);
      const server = await startServerProcess(home);
      try {
        const password = "console-audit-pass-1";
        const set = await runCli(home, ["admin", "set-password"], `${password}\n`);
        assert.equal(set.code, 0, set.stderr);
        const base = `http://${server.addr}`;
        const page = context.pages()[0] ?? await context.newPage();
        const problems: string[] = [];
        page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
        await page.goto(`${base}/login`);
        await page.getByPlaceholder("管理员密码").fill(password);
        await page.getByRole("button", { name: "登录" }).click();
        await page.locator("#page-header h1").waitFor();

        await openMenu(page, "端");
        await page.getByRole("button", { name: "开通端" }).click();
        const create = modal(page, "开通端");
        await formItem(create, "编号").locator("input").fill("audit-door");
        await create.getByRole("button", { name: "开通", exact: true }).click();
        await create.getByTestId("secret-value").waitFor();
        await create.getByRole("button", { name: "完成" }).click();
        await page.locator(".n-dialog").getByRole("button", { name: "已保存，关闭" }).click();

        await openMenu(page, "操作日志");
        const rows = page.locator(".n-data-table-tbody .n-data-table-tr");
        const made = rows.filter({ hasText: "audit-door" });
        await made.getByText("开通端").waitFor();
        await made.getByText("管理员", { exact: true }).waitFor();
        await made.getByText("成功").waitFor();
        const cli = rows.filter({ hasText: "重设管理员密码" });
        await cli.getByText("命令行", { exact: true }).waitFor();
        await shot(page, "audit-log");

        // The action filter keeps one family, in the address.
        await formItem(page.locator(".filter-bar"), "动作").locator(".n-select").click();
        await page.locator(".n-base-select-option", { hasText: "全部端操作" }).click();
        await page.getByRole("button", { name: "查询" }).click();
        await page.waitForURL(/action=endpoint/);
        await rows.filter({ hasText: "重设管理员密码" }).waitFor({ state: "detached" });
        await made.waitFor();
        assert.deepEqual(problems, []);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await context.close();
      await home.cleanup();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});
