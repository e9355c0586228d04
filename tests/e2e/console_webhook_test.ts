// The webhook panel of the endpoint page in a real browser (issue 34): set a webhook, see its
// secret once, send a test event that a real receiver verifies with that secret, see the attempt.
import assert from "node:assert/strict";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "../helpers/admin.ts";
import {
  CHROMIUM,
  confirmDialog,
  ensureBuilt,
  HAS_CHROMIUM,
  launch,
  shot,
  SHOTS,
} from "../helpers/browser.ts";
import { startReceiver } from "../helpers/webhook_receiver.ts";

if (!HAS_CHROMIUM) {
  console.warn(`SKIPPED tests/e2e/console_webhook_test.ts: ${CHROMIUM} is missing`);
}

Deno.test({
  name: "the endpoint page sets a webhook, shows its secret once and sends a signed test event",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const ref = { secret: "" };
    const receiver = startReceiver(ref);
    const t = await startAdminServer({ webhooks: { allow: ["127.0.0.1"] } });
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    try {
      await api.login();
      await t.createEndpoint("backend", "device-pass-123");
      const page = context.pages()[0] ?? await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      await page.goto(`${t.adminUrl}/login`);
      await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "登录" }).click();
      await page.locator("#page-header h1").waitFor();
      await page.goto(`${t.adminUrl}/endpoints/backend`);
      const panel = page.locator("#webhook");
      await panel.waitFor();

      // A private address is refused with the reason.
      await panel.getByPlaceholder("https://example.com/nixmsg").fill("http://10.0.0.1/hook");
      await panel.getByRole("button", { name: "设置" }).click();
      await page.getByText("webhooks.allow", { exact: false }).first().waitFor();

      await panel.getByPlaceholder("https://example.com/nixmsg").fill(receiver.url);
      await panel.getByRole("button", { name: "设置" }).click();
      const modal = page.locator(".n-modal", { hasText: "网络钩子签名密钥" });
      const value = modal.getByTestId("secret-value").locator("input");
      await value.waitFor();
      ref.secret = await value.inputValue();
      assert.match(ref.secret, /^whsec_/);
      await shot(page, "endpoint-webhook-secret");
      await modal.getByRole("button", { name: "完成" }).click();
      await confirmDialog(page, "已保存，关闭");

      await panel.getByRole("button", { name: "发送测试事件" }).click();
      await receiver.until(() => receiver.hits.length === 1, "the test event");
      assert.ok(receiver.hits[0].signed, "signed with the secret the page showed");
      await panel.getByText("测试事件").first().waitFor();
      await panel.getByText("成功 200").waitFor();
      await shot(page, "endpoint-webhook");
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
      await Deno.remove(dir, { recursive: true });
      await t.close();
      await receiver.close();
    }
  },
});
