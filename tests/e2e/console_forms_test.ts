// Issue 32 items 2 and 5 in a real browser: 退出登录 with the server unreachable does not pretend
// to log out; the send panel sets offline retention, delay and schedule; the import picker takes
// another file after a failed import.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "../helpers/admin.ts";
import {
  CHROMIUM,
  confirmDialog,
  ensureBuilt,
  HAS_CHROMIUM,
  launch,
  modal,
  shot,
  SHOTS,
} from "../helpers/browser.ts";

const PW = "device-pass-123";

if (!HAS_CHROMIUM) {
  console.warn(`SKIPPED tests/e2e/console_forms_test.ts: ${CHROMIUM} is missing`);
}

interface Rec {
  id: string;
  state: string;
  keep: boolean;
  ttl_seconds: number;
  send_at: number;
  created_at: number;
}

Deno.test({
  name:
    "the send panel sends with retention, delay and a schedule; a failed import can pick another file by touch; logout needs the server",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer();
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    try {
      await api.login();
      await t.createEndpoint("sender", PW);
      await t.createEndpoint("receiver", PW);
      const page = context.pages()[0] ?? await context.newPage();
      await page.goto(`${t.adminUrl}/login`);
      await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "登录" }).click();
      await page.locator("#page-header h1").waitFor();

      // Send panel: kept for 600 s, 30 s from now.
      await page.goto(`${t.adminUrl}/endpoints/sender`);
      const panel = page.locator("#send-test");
      await panel.locator(".n-select").click();
      await page.locator(".n-base-select-option", { hasText: "receiver" }).click();
      await panel.locator("textarea").fill("kept and delayed");
      await panel.getByTestId("send-when").getByText("延迟").click();
      await panel.getByTestId("send-delay").locator("input").fill("30");
      await panel.getByTestId("send-keep").click();
      await panel.getByTestId("send-ttl").locator("input").fill("600");
      await shot(page, "send-panel-options");
      await panel.getByRole("button", { name: "发送", exact: true }).click();
      await panel.getByTestId("send-state").getByText("未到发送时刻").waitFor();
      const list = await api.get("/api/admin/messages?sender=sender");
      // What the sender has sent, for the messages of a failed check.
      const sent = (items: Rec[]) =>
        JSON.stringify(items.map((m) => ({
          id: m.id,
          state: m.state,
          keep: m.keep,
          created_at: m.created_at,
          send_at: m.send_at,
        })));
      const first = list.data.items as Rec[];
      assert.equal(first.length, 1, `one click, one message: ${sent(first)}`);
      const [delayed] = first;
      assert.equal(delayed.state, "scheduled");
      assert.equal(delayed.keep, true);
      assert.equal(delayed.ttl_seconds, 600);
      const lag = delayed.send_at - delayed.created_at;
      assert.ok(lag >= 29_000 && lag <= 31_000, `sent for 30 s later: ${lag} ms`);

      // A time in the past is refused in the form; 立即 without keep sends for now.
      await panel.getByTestId("send-when").getByText("定时").click();
      await panel.getByText("请选择发送时刻").waitFor();
      assert.equal(
        await panel.getByRole("button", { name: "发送", exact: true }).isDisabled(),
        true,
      );
      // A time an hour ahead, typed into the picker as the browser shows it, is the send time.
      const at = Math.ceil((Date.now() + 3_600_000) / 1000) * 1000;
      const typed = await page.evaluate((ms) => {
        const d = new Date(ms);
        const p = (n: number) => String(n).padStart(2, "0");
        return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
          `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
      }, at);
      const atInput = panel.getByTestId("send-at").locator("input");
      await atInput.fill(typed);
      // Enter confirms the picker and sends nothing (it once submitted the form: a second send).
      await atInput.press("Enter");
      await panel.getByText("请选择发送时刻").waitFor({ state: "detached" });
      await panel.getByRole("button", { name: "发送", exact: true }).click();
      const count = (n: number) =>
        page.waitForFunction(
          async ([url, n]) => {
            const r = await fetch(url as string);
            const j = await r.json();
            return j.data.items.length === n;
          },
          [`${t.adminUrl}/api/admin/messages?sender=sender`, n],
          { timeout: 10_000 },
        );
      await count(2);
      const [scheduled] = (await api.get("/api/admin/messages?sender=sender")).data.items as Rec[];
      assert.equal(scheduled.state, "scheduled");
      assert.equal(scheduled.send_at, at, "sent for the time typed");

      await panel.getByTestId("send-when").getByText("立即").click();
      // The form's feedback line fades out and the rows below move up: click once they settled.
      await panel.getByText("请选择发送时刻").waitFor({ state: "detached" });
      await panel.getByTestId("send-keep").click();
      await panel.getByText("对方离线超过宽限期就不再投递").waitFor();
      await panel.getByRole("button", { name: "发送", exact: true }).click();
      await count(3);
      const both = (await api.get("/api/admin/messages?sender=sender")).data.items as Rec[];
      assert.equal(
        both.filter((m) => m.send_at === at).length,
        1,
        "one message for the picker's time",
      );
      assert.equal(both.length, 3, `three clicks, three messages: ${sent(both)}`);
      assert.equal(both[0].keep, false, `the last one is not kept: ${sent(both)}`);

      // Import: a bad file fails; the picker stays usable and another file goes through.
      await page.goto(`${t.adminUrl}/endpoints`);
      await page.getByRole("button", { name: "批量导入" }).click();
      const imp = modal(page, "批量导入端");
      const header = "id,name,login_password,talk_password,default_delay_seconds,remark\r\n";
      const pick = (name: string, csv: string) =>
        imp.locator("input[type=file]").setInputFiles({
          name,
          mimeType: "text/csv",
          buffer: Buffer.from(csv),
        });
      await pick("bad.csv", header + "bad id!,x,,,0,\r\n");
      await imp.getByRole("button", { name: "开始导入" }).click();
      await imp.locator(".n-alert").first().waitFor();
      assert.equal(await imp.getByRole("button", { name: "换一个文件" }).isDisabled(), false);
      // 换一个文件 opens the file chooser by touch alone (no hover, no mouse): a tap at its centre.
      const again = await imp.getByRole("button", { name: "换一个文件" }).boundingBox();
      assert.ok(again !== null);
      const cdp = await context.newCDPSession(page);
      await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: true, maxTouchPoints: 1 });
      const chooser = page.waitForEvent("filechooser", { timeout: 5000 });
      const tap = { x: again.x + again.width / 2, y: again.y + again.height / 2 };
      await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: [tap] });
      await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
      await (await chooser).setFiles({
        name: "good.csv",
        mimeType: "text/csv",
        buffer: Buffer.from(header + "imp-ok,好,,,0,\r\n"),
      });
      await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: false });
      await imp.getByText("good.csv").waitFor();
      // The new file replaces the old one.
      await imp.getByText("bad.csv").waitFor({ state: "detached" });
      await imp.getByRole("button", { name: "开始导入" }).click();
      await imp.getByText("已创建 1 个端").waitFor();
      await imp.getByRole("button", { name: "下载生成的密码（CSV）" }).click();
      await imp.getByRole("button", { name: "完成" }).click();

      // Logout while the server cannot be reached: the console says so and stays logged in.
      await page.route("**/api/admin/logout", (r) => r.abort());
      await page.getByRole("button", { name: "退出登录" }).click();
      await page.locator(".n-dialog").getByRole("button", { name: "退出" }).click();
      await page.getByText(/没有退出/).waitFor();
      assert.ok(!page.url().includes("/login"), "still in the console");
      await page.locator(".n-dialog").getByRole("button", { name: "取消" }).click();
      await page.unroute("**/api/admin/logout");
      await page.getByRole("button", { name: "退出登录" }).click();
      await confirmDialog(page, "退出");
      await page.waitForURL(/\/login/);
      await page.goto(`${t.adminUrl}/endpoints`);
      await page.waitForURL(/\/login\?redirect=/);
    } finally {
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});
