// The live inbox in a real browser (issue 32 "Done when"): the endpoint detail page shows, within
// 1 s, a message sent to that endpoint by another client, and the device still gets it: the
// console did not ack it.
import assert from "node:assert/strict";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "../helpers/admin.ts";
import { online } from "../helpers/client.ts";
import { CHROMIUM, ensureBuilt, HAS_CHROMIUM, launch, shot, SHOTS } from "../helpers/browser.ts";

const PW = "device-pass-123";

if (!HAS_CHROMIUM) {
  console.warn(`SKIPPED tests/e2e/console_inbox_test.ts: ${CHROMIUM} is missing`);
}

Deno.test({
  name:
    "the live inbox shows a message to the endpoint within 1 s without acking it, pauses, clears and opens the body",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer();
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    const clients: { close(): Promise<void> }[] = [];
    try {
      await api.login();
      await t.createEndpoint("sender", PW);
      await t.createEndpoint("device", PW);
      const { client: device } = await online(t.wsUrl, "device", PW);
      clients.push(device);
      const { client: sender } = await online(t.wsUrl, "sender", PW);
      clients.push(sender);

      const page = context.pages()[0] ?? await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      await page.goto(`${t.adminUrl}/login`);
      await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "登录" }).click();
      await page.locator("#page-header h1").waitFor();
      await page.goto(`${t.adminUrl}/endpoints/device`);
      const inbox = page.locator("#inbox");
      await inbox.getByTestId("inbox-status").getByText("实时").waitFor();

      const send = (id: string, data: string) =>
        sender.request({
          type: "send",
          id,
          to: { kind: "endpoint", id: "device" },
          body: { enc: "utf8", data },
          offline: { keep: true, ttl_seconds: 3600 },
        });
      const sent = await send("live-1", "hello from sender");
      assert.equal(sent.ok, true, JSON.stringify(sent));
      // Counted from the committed send: the row must appear within 1 s.
      const row = inbox.locator('.row[data-type="msg"]', { hasText: "live-1" });
      await row.waitFor({ timeout: 1000 });
      await row.getByText("来自 sender").waitFor();
      assert.equal(await inbox.getByText("hello from sender").count(), 0, "no body until opened");

      // The device got it and the delivery is still pending: the console acked nothing.
      const got = await device.waitFrame((f) => f.type === "msg" && f.id === "live-1", "live-1");
      assert.equal((got.body as { data: string }).data, "hello from sender");
      const rec = await api.get("/api/admin/messages?id=live-1");
      const [item] = rec.data.items as { counts: Record<string, number> }[];
      assert.equal(item.counts.pending, 1, "not acked by the console");
      await shot(page, "endpoint-inbox");

      // 打开正文 reads the body on request.
      await row.getByRole("button", { name: "打开正文" }).click();
      const body = page.getByTestId("inbox-body");
      await body.getByText("hello from sender").waitFor();
      await page.locator(".n-modal").getByRole("button", { name: "关闭" }).click();
      await page.locator(".n-modal").waitFor({ state: "detached" });

      // Pause holds new frames back; resume shows them; clear empties the list.
      await inbox.getByTestId("inbox-pause").click();
      assert.equal((await send("live-2", "second")).ok, true);
      await inbox.getByRole("button", { name: /继续（\d+ 条新）/ }).waitFor();
      assert.equal(await inbox.locator(".row", { hasText: "live-2" }).count(), 0);
      await inbox.getByTestId("inbox-pause").click();
      await inbox.locator('.row[data-type="msg"]', { hasText: "live-2" }).waitFor();
      await inbox.getByRole("button", { name: "清空" }).click();
      await inbox.getByText("还没有推送给这个端的帧").waitFor();

      // The device acks as usual: its resp shows up, and the delivery ends accepted.
      const ack = await device.request({ type: "ack", from: "sender", id: "live-1" });
      assert.equal(ack.ok, true, JSON.stringify(ack));
      await inbox.locator('.row[data-type="resp"]').first().waitFor();
      assert.deepEqual(problems, []);
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});
