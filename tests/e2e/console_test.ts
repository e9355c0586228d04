// The web console's main path in a real browser (spec 13: 登录、开通、开启注册并设置安全码、建群、
// 看到未完成记录), against the real in-process server serving web/dist. Every page is saved as a
// screenshot under tests/e2e/screenshots/ (a CI artifact).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Page } from "playwright-core";
import { ADMIN_PASSWORD, AdminClient, startAdminServer } from "../helpers/admin.ts";
import { online } from "../helpers/client.ts";
import {
  CHROMIUM,
  confirmDialog,
  DESKTOP,
  ensureBuilt,
  formItem,
  HAS_CHROMIUM,
  launch,
  modal,
  openMenu,
  PHONE,
  shot,
  SHOTS,
  still,
} from "../helpers/browser.ts";

const PW = "device-pass-123";

if (!HAS_CHROMIUM) {
  console.warn(
    `SKIPPED tests/e2e/console_test.ts: ${CHROMIUM} is missing (apt-get install chromium)`,
  );
}

Deno.test({
  name:
    "the console logs in, creates an endpoint, opens registration, builds a group and lists a pending record",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer();
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    const problems: string[] = [];
    const unmarked: string[] = [];
    try {
      await api.login();
      await t.createEndpoint("sender", PW);
      await t.createEndpoint("receiver", PW);
      // A kept message to an offline endpoint stays pending: the record the console must show.
      const { client } = await online(t.wsUrl, "sender", PW);
      const sent = await client.request({
        type: "send",
        id: "e2e-pending-1",
        to: { kind: "endpoint", id: "receiver" },
        body: { enc: "utf8", data: "secret body text" },
        delay_ms: 0,
        offline: { keep: true, ttl_seconds: 3600 },
      });
      assert.equal(sent.ok, true, JSON.stringify(sent));
      await client.close();

      const page = context.pages()[0] ?? await context.newPage();
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      page.on("console", (m) => {
        // A 401 before login is expected; anything else (a CSP refusal, a Vue warning) is not.
        if (m.type() === "error" && !m.text().includes("401")) problems.push(m.text());
      });
      page.on("response", (r) => {
        if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
      });
      page.on("request", (r) => {
        const url = new URL(r.url());
        if (!url.pathname.startsWith("/api/admin/") || r.method() === "GET") return;
        if (r.headers()["x-nixmsg-request"] !== "1") unmarked.push(`${r.method()} ${url.pathname}`);
      });

      // Login: an unauthenticated visit lands on the login page.
      await page.goto(`${t.adminUrl}/endpoints`);
      await page.waitForURL(/\/login\?redirect=/);
      await page.getByText("NixMsg 管理后台").waitFor();
      await shot(page, "01-login");
      await page.getByPlaceholder("管理员密码").fill("wrong-password-123");
      await page.getByRole("button", { name: "登录" }).click();
      await page.locator(".n-alert", { hasText: "密码错误" }).waitFor();
      await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "登录" }).click();
      await page.waitForURL(/\/endpoints$/);

      // Overview.
      await openMenu(page, "概览");
      await page.getByText("端总数").waitFor();
      await page.getByTestId("version").waitFor();
      await shot(page, "02-overview");

      // Endpoints: create one; the generated password is shown once.
      await openMenu(page, "端");
      await page.getByRole("link", { name: "receiver" }).waitFor();
      await shot(page, "03-endpoints");
      await page.getByRole("button", { name: "开通端" }).click();
      const create = modal(page, "开通端");
      await formItem(create, "编号").locator("input").fill("door-1");
      await formItem(create, "名称").locator("input").fill("门口");
      await formItem(create, "备注").locator("textarea").fill("一楼东侧");
      await shot(page, "04-endpoint-create");
      await create.getByRole("button", { name: "开通", exact: true }).click();
      const secret = create.getByTestId("secret-value").locator("input");
      await secret.waitFor();
      const generated = await secret.inputValue();
      assert.equal(generated.length, 20, "a generated password has 20 characters");
      await shot(page, "05-endpoint-password-once");
      await create.getByRole("button", { name: "完成" }).click();
      await confirmDialog(page, "已保存，关闭");
      await page.getByRole("link", { name: "door-1" }).waitFor();
      const made = await api.get("/api/admin/endpoints/door-1");
      assert.equal(made.status, 200);
      assert.equal((made.data.item as { name: string }).name, "门口");

      // CSV import: progress, then the generated passwords as a one-time download.
      await page.getByRole("button", { name: "批量导入" }).click();
      const imp = modal(page, "批量导入端");
      const csv = "id,name,login_password,talk_password,default_delay_seconds,remark\r\n" +
        "imp-1,导入一,,,0,\r\nimp-2,导入二,given-pass-1,,5,备注\r\n";
      await imp.locator("input[type=file]").setInputFiles({
        name: "endpoints.csv",
        mimeType: "text/csv",
        buffer: Buffer.from(csv),
      });
      await imp.getByRole("button", { name: "开始导入" }).click();
      await imp.getByText("已创建 2 个端").waitFor();
      await shot(page, "06-endpoint-import");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        imp.getByRole("button", { name: "下载生成的密码（CSV）" }).click(),
      ]);
      const passwords = await Deno.readTextFile(await download.path());
      assert.match(passwords, /^\uFEFFrow,id,login_password\r\n2,imp-1,\S{20}\r\n$/);
      await imp.getByRole("button", { name: "已下载" }).waitFor();
      await imp.getByRole("button", { name: "完成" }).click();
      await imp.waitFor({ state: "hidden" });
      await page.getByRole("link", { name: "imp-2" }).waitFor();

      // Batch: disable the two imported endpoints after a confirmation.
      for (const id of ["imp-1", "imp-2"]) {
        await page.locator(".n-data-table-tr", { hasText: id }).locator(".n-checkbox").click();
      }
      await page.getByText("已选 2 个").waitFor();
      await page.locator("#page-header").getByRole("button", { name: "停用" }).click();
      await page.locator(".n-dialog", { hasText: "确定停用选中的 2 个端" }).waitFor();
      await confirmDialog(page, "停用");
      await page.locator(".n-data-table-tr", { hasText: "imp-2" }).getByText("停用").waitFor();
      const disabled = await api.get("/api/admin/endpoints?enabled=false");
      assert.equal(disabled.data.total, 2);

      // Endpoint detail: edit, talk password, and a reset login password shown once.
      await page.getByRole("link", { name: "door-1" }).click();
      await page.locator("#page-header h1", { hasText: "端 door-1" }).waitFor();
      await page.getByText("一楼东侧").waitFor();
      await shot(page, "07-endpoint-detail");
      // Send a test message as door-1; its per-recipient result updates on the same page.
      const panel = page.locator("#send-test");
      await panel.locator(".n-select").click();
      await page.locator(".n-base-select-option", { hasText: "receiver" }).click();
      await panel.locator("textarea").fill("test from the console");
      await panel.getByRole("button", { name: "发送", exact: true }).click();
      // The receiver stays offline past the grace period: the result ends as dropped.
      await panel.locator('[data-recipient="receiver"] [data-state="dropped"]').waitFor();
      await panel.getByTestId("send-state").getByText("已结束").waitFor();
      await shot(page, "07b-endpoint-send-test");
      await page.getByRole("button", { name: "编辑" }).click();
      const edit = modal(page, "编辑 door-1");
      await formItem(edit, "名称").locator("input").fill("正门");
      await edit.getByRole("button", { name: "保存" }).click();
      await page.locator(".n-descriptions", { hasText: "正门" }).waitFor();
      await page.getByRole("button", { name: "对话密码" }).click();
      const talk = modal(page, "对话密码");
      await formItem(talk, "新对话密码").locator("input").fill("talk-secret-1");
      await talk.getByRole("button", { name: "设置" }).click();
      await page.locator(".n-descriptions-table-row", { hasText: "已设置" }).waitFor();
      await page.getByRole("button", { name: "重置登录密码" }).click();
      await confirmDialog(page, "重置");
      const reset = modal(page, "新的登录密码");
      const resetPassword = await reset.getByTestId("secret-value").locator("input").inputValue();
      assert.equal(resetPassword.length, 20);
      await shot(page, "08-endpoint-reset-password");
      await reset.getByRole("button", { name: "完成" }).click();
      await confirmDialog(page, "已保存，关闭");
      const door = await api.get("/api/admin/endpoints/door-1");
      const item = door.data.item as { name: string; talk_password_set: boolean };
      assert.deepEqual([item.name, item.talk_password_set], ["正门", true]);

      // Registration: enable with a code.
      await openMenu(page, "注册设置");
      await page.getByText("注册已关闭").waitFor();
      await page.getByTestId("registration-enabled").click();
      await formItem(page.locator(".n-card"), "安全码").locator("input").fill("e2e-code-123456");
      await page.getByRole("button", { name: "保存" }).click();
      await page.getByText("注册已开启").waitFor();
      await shot(page, "09-registration");
      const reg = await api.get("/api/admin/registration");
      assert.deepEqual([reg.data.enabled, reg.data.code], [true, "e2e-code-123456"]);

      // Groups: create one owned by door-1 with receiver as a member.
      await openMenu(page, "群");
      await page.getByRole("button", { name: "创建群" }).click();
      const group = modal(page, "创建群");
      await formItem(group, "群编号").locator("input").fill("g-e2e");
      await formItem(group, "群名").locator("input").fill("一组");
      await formItem(group, "群主").locator("input").fill("door-1");
      await formItem(group, "成员").locator("textarea").fill("receiver");
      await shot(page, "10-group-create");
      await group.getByRole("button", { name: "创建", exact: true }).click();
      await page.getByRole("link", { name: "g-e2e" }).waitFor();
      await shot(page, "11-groups");
      const g = await api.get("/api/admin/groups/g-e2e");
      assert.equal((g.data.item as { members: number }).members, 2);
      await page.getByRole("link", { name: "g-e2e" }).click();
      await page.locator("#page-header h1", { hasText: "群 g-e2e" }).waitFor();
      await page.getByText("群主", { exact: true }).first().waitFor();
      await shot(page, "12-group-detail");
      await page.getByRole("button", { name: "加成员" }).click();
      const add = modal(page, "加成员");
      await add.locator("textarea").fill("sender imp-1");
      await add.getByRole("button", { name: "加入" }).click();
      await add.locator(".n-alert", { hasText: "1 个没有加入" }).waitFor();
      await add.getByText("imp-1：端已停用").waitFor();
      await add.getByRole("button", { name: "关闭" }).click();
      await page.locator(".n-data-table-tr", { hasText: "sender" })
        .getByRole("button", { name: "设为群主" }).click();
      await modal(page, "转让群主").getByRole("button", { name: "转让" }).click();
      await modal(page, "转让群主").waitFor({ state: "hidden" });
      await page.locator(".n-data-table-tr", { hasText: "sender" })
        .getByText("群主", { exact: true }).waitFor();
      const moved = await api.get("/api/admin/groups/g-e2e");
      assert.deepEqual(moved.data.item, { ...(moved.data.item as object), owner_id: "sender" });

      // Message records: the pending message, then its recipients.
      await openMenu(page, "消息记录");
      await page.getByRole("button", { name: "只看未完成" }).click();
      const row = page.locator(".n-data-table-tr", { hasText: "e2e-pending-1" });
      await row.waitFor();
      await row.getByText("未收下 1").waitFor();
      await shot(page, "13-messages");
      await row.getByRole("link").first().click();
      await page.locator("#page-header h1", { hasText: "消息记录 #" }).waitFor();
      await page.locator(".n-data-table-tr", { hasText: "receiver" }).getByText("未收下").waitFor();
      await shot(page, "14-message-detail");
      assert.ok(!(await page.content()).includes("secret body text"), "no body in the console");

      // API tokens: a new token is shown once.
      await openMenu(page, "API 令牌");
      await page.getByRole("button", { name: "创建令牌" }).click();
      const tok = modal(page, "创建令牌");
      await formItem(tok, "名称").locator("input").fill("计费系统");
      await tok.getByRole("button", { name: "创建", exact: true }).click();
      const tokenBox = modal(page, "新的 API 令牌");
      const token = await tokenBox.getByTestId("secret-value").locator("input").inputValue();
      assert.match(token, /^nxm_/);
      await shot(page, "15-token-once");
      await tokenBox.getByRole("button", { name: "完成" }).click();
      await confirmDialog(page, "已保存，关闭");
      await page.locator(".n-data-table-tr", { hasText: "计费系统" }).waitFor();
      await shot(page, "16-tokens");

      // Settings and the password page.
      await openMenu(page, "运行参数");
      await page.getByText("端接入端口").waitFor();
      await shot(page, "17-settings");
      await openMenu(page, "修改密码");
      await shot(page, "18-password");
      const pwForm = page.locator(".n-card");
      await formItem(pwForm, "当前密码").locator("input").fill("not-the-password");
      await formItem(pwForm, "新密码").locator("input").fill("new-admin-password-1");
      await formItem(pwForm, "再输一次").locator("input").fill("new-admin-password-1");
      await page.locator("#page-header").getByRole("button", { name: "保存" }).click();
      await page.locator(".n-alert", { hasText: "当前密码不对" }).waitFor();
      await formItem(pwForm, "当前密码").locator("input").fill(ADMIN_PASSWORD);
      await page.locator("#page-header").getByRole("button", { name: "保存" }).click();
      await page.getByText("管理员密码已修改").waitFor();
      assert.equal((await api.get("/api/admin/me")).status, 401, "other sessions end");
      await openMenu(page, "概览");
      await page.getByText("端总数").waitFor();

      // A 401 (the session is gone) opens the re-login dialog; giving up goes to the login page.
      await context.clearCookies();
      await page.locator(".n-layout-sider").getByRole("link", { name: "端", exact: true }).click();
      const relogin = page.getByTestId("relogin");
      await relogin.getByText("登录已过期，请重新登录").waitFor();
      await relogin.getByRole("button", { name: "去登录页" }).click();
      await page.waitForURL(/\/login\?redirect=(%2F|\/)endpoints$/);
      await page.getByRole("button", { name: "登录" }).waitFor();

      assert.deepEqual(unmarked, [], "every state change carries X-Nixmsg-Request: 1");
      assert.deepEqual(problems, [], "no script errors or refused resources");
    } finally {
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Issue 15: phone width, desktop column fit, session expiry, failed page loads, the address
// keeping filters, whole-day ranges, and the live overview.

type Box = { x: number; y: number; width: number; height: number };
/** The bits of the page's DOM the checks read (the test is type-checked without the DOM lib). */
interface DomEl {
  scrollWidth: number;
  clientWidth: number;
  querySelector(selector: string): DomEl | null;
  querySelectorAll(selector: string): ArrayLike<DomEl>;
}
type PageGlobal = { document: { documentElement: DomEl } & DomEl };

async function box(loc: ReturnType<Page["locator"]>): Promise<Box> {
  const b = await loc.boundingBox();
  if (b === null) throw new Error("element has no box (hidden?)");
  return b;
}

function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height &&
    b.y < a.y + a.height;
}

/** Collects script errors and refused resources of `page` (401s and aborted chunks aside). */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    const text = m.text();
    if (m.type() !== "error" || text.includes("401") || text.includes("ERR_FAILED")) return;
    problems.push(text);
  });
  page.on("response", (r) => {
    if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
  });
  return problems;
}

async function login(page: Page, base: string, path = "/"): Promise<void> {
  await page.goto(`${base}${path}`);
  await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
  await page.getByRole("button", { name: "登录" }).click();
  await page.locator("#page-header h1").waitFor();
}

/** The console's pages with something to look at on each. */
interface Seeded {
  seq: number;
}

async function seed(
  t: Awaited<ReturnType<typeof startAdminServer>>,
  api: AdminClient,
): Promise<Seeded> {
  await api.login();
  // 30 devices: the endpoint list has two pages of 20, and a group message to all of them has
  // enough recipients to fill the message detail's table.
  for (let i = 0; i < 30; i++) {
    const r = await api.post("/api/admin/endpoints", {
      id: `dev-${String(i).padStart(2, "0")}`,
      name: `设备 ${i}`,
      login_password: PW,
      remark: i % 3 === 0 ? "一楼东侧的门禁，备注写得长一点看看换行" : "",
    });
    assert.equal(r.status, 200, r.text);
  }
  await t.createEndpoint("sender", PW);
  await t.createEndpoint("receiver", PW);
  const g = await api.post("/api/admin/groups", {
    id: "g-room",
    name: "一号房间",
    owner_id: "sender",
    members: [
      "receiver",
      ...Array.from({ length: 30 }, (_, i) => `dev-${String(i).padStart(2, "0")}`),
    ],
  });
  assert.equal(g.status, 200, g.text);
  const { client } = await online(t.wsUrl, "sender", PW);
  let seq = 0;
  try {
    for (let i = 0; i < 3; i++) {
      const sent = await client.request({
        type: "send",
        id: `seed-${i}`,
        to: { kind: "endpoint", id: "receiver" },
        body: { enc: "utf8", data: "secret body text" },
        delay_ms: 0,
        offline: { keep: true, ttl_seconds: 3600 },
      });
      assert.equal(sent.ok, true, JSON.stringify(sent));
    }
    const group = await client.request({
      type: "send",
      id: "seed-group",
      to: { kind: "group", id: "g-room" },
      body: { enc: "utf8", data: "secret body text" },
      delay_ms: 0,
      offline: { keep: true, ttl_seconds: 3600 },
    });
    assert.equal(group.ok, true, JSON.stringify(group));
    const list = await api.get("/api/admin/messages?id=seed-group");
    seq = (list.data.items as { seq: number }[])[0].seq;
  } finally {
    await client.close();
  }
  return { seq };
}

/** One console page: screenshot name, address, header title, and what opens a dialog. */
interface ConsolePage {
  name: string;
  path: string;
  title: string;
  /** Page-action buttons that open a dialog (and change nothing until it is confirmed). */
  dialogs?: string[];
  /** Date pickers in its filters, opened to check their panel. */
  pickers?: boolean;
}

/** Every page of the console. */
function pagesOf(s: Seeded): ConsolePage[] {
  return [
    { name: "overview", path: "/", title: "概览" },
    { name: "endpoints", path: "/endpoints", title: "端", dialogs: ["开通端", "批量导入"] },
    {
      name: "endpoint-detail",
      path: "/endpoints/dev-00",
      title: "端 dev-00",
      dialogs: ["编辑", "对话密码", "重置登录密码", "停用", "删除"],
    },
    { name: "registration", path: "/registration", title: "注册设置" },
    { name: "groups", path: "/groups", title: "群", dialogs: ["创建群"] },
    {
      name: "group-detail",
      path: "/groups/g-room",
      title: "群 g-room",
      dialogs: ["改名", "转让", "解散", "加成员"],
    },
    { name: "messages", path: "/messages", title: "消息记录", pickers: true },
    { name: "message-detail", path: `/messages/${s.seq}`, title: `消息记录 #${s.seq}` },
    { name: "tokens", path: "/tokens", title: "API 令牌", dialogs: ["创建令牌"] },
    { name: "audit", path: "/audit", title: "操作日志", pickers: true },
    { name: "settings", path: "/settings", title: "运行参数" },
    { name: "nodes", path: "/nodes", title: "节点" },
    { name: "password", path: "/password", title: "修改密码" },
    { name: "missing", path: "/no-such-page", title: "页面不存在" },
  ];
}

/** Fails unless `b` lies entirely inside the phone's viewport. */
function onScreen(b: Box, what: string): void {
  assert.ok(
    b.x >= 0 && b.y >= 0 && b.x + b.width <= PHONE.width + 1 &&
      b.y + b.height <= PHONE.height + 1,
    `${what} is off screen: ${JSON.stringify(b)}`,
  );
}

/**
 * Opens each dialog of the page and each date picker of its filters: every button of a dialog
 * and the whole picker panel are on screen, and the page does not grow wider (issue 32 item 3).
 */
async function checkPhoneOverlays(page: Page, p: ConsolePage): Promise<void> {
  for (const name of p.dialogs ?? []) {
    await page.getByTestId("page-actions").getByRole("button", { name, exact: true }).click();
    const overlay = page.locator(".n-modal, .n-dialog").last();
    await overlay.waitFor();
    await still(page);
    const buttons = overlay.locator(".n-button:visible");
    assert.ok(await buttons.count() > 0, `${p.name}/${name}: a dialog without buttons`);
    for (let i = 0; i < await buttons.count(); i++) {
      onScreen(await box(buttons.nth(i)), `${p.name}/${name}: button ${i}`);
    }
    await shot(page, `phone-${p.name}-dialog-${p.dialogs!.indexOf(name)}`);
    const cancel = overlay.getByRole("button", { name: /^(取消|关闭)$/ });
    if (await cancel.count() > 0) await cancel.first().click();
    else await page.keyboard.press("Escape");
    await overlay.waitFor({ state: "detached" });
  }
  if (p.pickers) {
    const pickers = page.locator(".filter-bar .n-date-picker");
    assert.ok(await pickers.count() > 0, `${p.name}: no date picker`);
    for (let i = 0; i < await pickers.count(); i++) {
      await pickers.nth(i).click();
      const panel = page.locator(".n-date-panel").last();
      await panel.waitFor();
      await still(page);
      onScreen(await box(panel), `${p.name}: date panel ${i}`);
      const docWidth = await page.evaluate(() =>
        (globalThis as unknown as PageGlobal).document.documentElement.scrollWidth
      );
      assert.ok(docWidth <= PHONE.width, `${p.name}: ${docWidth}px wide with the picker open`);
      await page.keyboard.press("Escape");
      await panel.waitFor({ state: "detached" });
    }
  }
}

/** Waits until the page's data is on screen (no loading table, no spinner). */
async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      (globalThis as unknown as PageGlobal).document.querySelector(
        ".n-data-table-loading-wrapper, .n-spin",
      ) === null,
    undefined,
    { timeout: 10_000 },
  ).catch(async (err) => {
    await shot(page, "failed-settled");
    throw new Error(`${page.url()} did not settle: ${err}`);
  });
}

/** Phone layout checks that hold on every page. */
async function checkPhonePage(page: Page, name: string): Promise<void> {
  const width = PHONE.width;
  const docWidth = await page.evaluate(() =>
    (globalThis as unknown as PageGlobal).document.documentElement.scrollWidth
  );
  assert.ok(docWidth <= width, `${name}: the page is ${docWidth}px wide`);
  // Nothing in the header overlaps, and all of it is on screen.
  const menuButton = await box(page.getByTestId("menu-button"));
  const title = await box(page.locator("#page-header h1"));
  assert.ok(!overlaps(menuButton, title), `${name}: menu button and title overlap`);
  const headerButtons = page.locator(".n-layout-header .n-button");
  for (let i = 0; i < await headerButtons.count(); i++) {
    const b = await box(headerButtons.nth(i));
    assert.ok(b.x >= 0 && b.x + b.width <= width + 1, `${name}: header button off screen`);
  }
  assert.ok(title.x + title.width <= width, `${name}: title runs off screen`);
  // The page's buttons wrap at the top of the body, each fully on screen, none overlapping.
  const actions = page.getByTestId("page-actions").locator(".n-button");
  const boxes: Box[] = [];
  for (let i = 0; i < await actions.count(); i++) boxes.push(await box(actions.nth(i)));
  for (const [i, b] of boxes.entries()) {
    assert.ok(b.x >= 0 && b.x + b.width <= width + 1, `${name}: action ${i} off screen`);
    for (const other of boxes.slice(i + 1)) assert.ok(!overlaps(b, other), `${name}: overlap`);
  }
  // Tables scroll sideways inside their own box.
  const tables = page.locator(".n-data-table");
  for (let i = 0; i < await tables.count(); i++) {
    const b = await box(tables.nth(i));
    assert.ok(b.x >= 0 && b.x + b.width <= width + 1, `${name}: table wider than the screen`);
  }
  // Descriptions get one column, wide enough that values do not wrap a character per line.
  const cells = page.locator(".n-descriptions-table-content");
  for (let i = 0; i < await cells.count(); i++) {
    const b = await box(cells.nth(i));
    assert.ok(b.width >= 150, `${name}: a description value is only ${b.width}px wide`);
    assert.ok(b.x + b.width <= width + 1, `${name}: a description runs off screen`);
  }
}

Deno.test({
  name: "every page at 390×844 and 1280×800: phone layout, desktop columns, screenshots",
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
      const seeded = await seed(t, api);
      const page = context.pages()[0] ?? await context.newPage();
      const problems = watchProblems(page);

      // Phone: the login page fits, then every page.
      await page.setViewportSize(PHONE);
      await page.goto(`${t.adminUrl}/login`);
      await page.getByRole("button", { name: "登录" }).waitFor();
      const card = await box(page.locator(".n-card").first());
      assert.ok(card.x >= 0 && card.x + card.width <= PHONE.width, "login card fits");
      await shot(page, "phone-login");
      await login(page, t.adminUrl);
      for (const p of pagesOf(seeded)) {
        await page.goto(`${t.adminUrl}${p.path}`);
        await page.locator("#page-header h1", { hasText: p.title }).waitFor();
        await settled(page);
        assert.equal(await page.title(), `${p.title} - NixMsg 管理后台`, "each page names its tab");
        await checkPhonePage(page, p.name);
        await shot(page, `phone-${p.name}`);
        await checkPhoneOverlays(page, p);
        if (p.name === "endpoint-detail") {
          // The send panel's fields stay inside its card (they share the forms' layout).
          const card = await box(page.locator("#send-test"));
          const fields = page.locator("#send-test .n-select, #send-test .n-input");
          for (let i = 0; i < await fields.count(); i++) {
            const f = await box(fields.nth(i));
            assert.ok(f.x >= card.x && f.x + f.width <= card.x + card.width, `send field ${i}`);
          }
          // The recipient list opens on screen, its options usable, the page no wider.
          await page.locator("#send-test .n-select").first().click();
          const menu = page.locator(".n-base-select-menu").last();
          await menu.locator(".n-base-select-option").first().waitFor();
          await still(page);
          onScreen(await box(menu), "the send panel's recipient list");
          const wide = await page.evaluate(() =>
            (globalThis as unknown as PageGlobal).document.documentElement.scrollWidth
          );
          assert.ok(wide <= PHONE.width, `${wide}px wide with the recipient list open`);
          await shot(page, "phone-send-select");
          // Choosing a recipient closes the list.
          await menu.locator(".n-base-select-option").first().click();
          await menu.waitFor({ state: "hidden" });
        }
      }
      // No sidebar on a phone: the menu is a drawer that closes once a page is chosen.
      assert.equal(await page.locator(".n-layout-sider").count(), 0);
      await page.getByTestId("menu-button").click();
      const drawer = page.locator(".n-drawer");
      await drawer.getByRole("link", { name: "群", exact: true }).waitFor();
      await shot(page, "phone-menu-drawer");
      await drawer.getByRole("link", { name: "群", exact: true }).click();
      await page.locator("#page-header h1", { hasText: "群" }).waitFor();
      await drawer.waitFor({ state: "detached" });
      // The endpoint list shows id, state and online; the rest opens under the row.
      await page.goto(`${t.adminUrl}/endpoints`);
      await page.getByRole("link", { name: "dev-00" }).waitFor();
      const scroll = await page.evaluate(() => {
        const doc = (globalThis as unknown as PageGlobal).document;
        const body = doc.querySelector(".n-data-table-base-table-body");
        if (body === null) return null;
        // The table body's scroll container (the virtual list's, or the body itself).
        const el = body.querySelector(".v-vl, .n-scrollbar-container") ?? body;
        return el.scrollWidth - el.clientWidth;
      });
      assert.ok(scroll !== null && scroll <= 1, `no sideways scroll in the table: ${scroll}`);
      for (const h of ["编号", "状态", "在线"]) {
        await page.locator(".n-data-table-th", { hasText: h }).first().waitFor();
      }
      const first = page.locator(".n-data-table-tr", { hasText: "dev-00" });
      await first.locator(".n-data-table-expand-trigger").click();
      const more = page.locator(".phone-more").first();
      await more.getByText("开通时间", { exact: true }).waitFor();
      await more.getByText("备注", { exact: true }).waitFor();
      onScreen(await box(more), "the expanded row");
      await shot(page, "phone-endpoints-expanded");
      // Forms put labels on top; the page buttons do not sit on 退出登录 (which is in the drawer).
      await page.getByTestId("page-actions").getByRole("button", { name: "开通端" }).click();
      const create = modal(page, "开通端");
      const label = await box(formItem(create, "编号").locator(".n-form-item-label"));
      const input = await box(formItem(create, "编号").locator("input"));
      assert.ok(label.y + label.height <= input.y + 1, "the label is above its field");
      const dlg = await box(create);
      assert.ok(dlg.x >= 0 && dlg.x + dlg.width <= PHONE.width, "the dialog fits");
      await shot(page, "phone-endpoint-create");
      await create.getByRole("button", { name: "取消" }).click();
      await page.getByTestId("menu-button").click();
      await drawer.getByRole("button", { name: "退出登录" }).waitFor();
      await page.keyboard.press("Escape");

      // Desktop 1280×800: every page, with the important columns on screen.
      await page.setViewportSize(DESKTOP);
      for (const p of pagesOf(seeded)) {
        await page.goto(`${t.adminUrl}${p.path}`);
        await page.locator("#page-header h1", { hasText: p.title }).waitFor();
        await settled(page);
        const docWidth = await page.evaluate(() =>
          (globalThis as unknown as PageGlobal).document.documentElement.scrollWidth
        );
        assert.ok(docWidth <= DESKTOP.width, `${p.name}: ${docWidth}px wide`);
        // Pagination is small (spec 2.4) and stays above the fold.
        const pager = page.locator(".n-pagination").first();
        if (await pager.count() > 0) {
          const b = await box(pager);
          assert.ok(b.y + b.height <= DESKTOP.height, `${p.name}: pagination below the fold`);
          const item = await box(pager.locator(".n-pagination-item").first());
          assert.ok(item.height <= 24, `${p.name}: pagination items ${item.height}px tall`);
        }
        await shot(page, `desktop-${p.name}`);
      }
      for (
        const [path, headers] of [
          ["/messages", ["序号", "提交时间", "发送时刻"]],
          ["/endpoints", ["编号", "开通时间"]],
          [`/messages/${seeded.seq}`, ["接收端", "更新时间"]],
        ] as const
      ) {
        await page.goto(`${t.adminUrl}${path}`);
        await settled(page);
        for (const h of headers) {
          const th = await box(page.locator(".n-data-table-th", { hasText: h }).first());
          assert.ok(th.x >= 0 && th.x + th.width <= DESKTOP.width, `${path}: ${h} off screen`);
        }
      }
      assert.deepEqual(problems, [], "no script errors or refused resources");
    } finally {
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});

Deno.test({
  name:
    "the console keeps work across an expired session, shows failed page loads, and keeps filters in the address",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer();
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    const devices: { close(): Promise<void> }[] = [];
    try {
      await seed(t, api);
      await context.grantPermissions(["clipboard-read", "clipboard-write"], {
        origin: t.adminUrl,
      });
      const page = context.pages()[0] ?? await context.newPage();
      const problems = watchProblems(page);
      await login(page, t.adminUrl);

      // A page whose code cannot be fetched shows the error and a retry; the retry opens it.
      const groupsChunk = /\/assets\/GroupsPage-[^/]+\.js$/;
      await page.route(groupsChunk, (r) => r.abort());
      await page.locator(".n-layout-sider").getByRole("link", { name: "群", exact: true }).click();
      const failure = page.getByTestId("load-failure");
      await failure.getByText("页面加载失败").waitFor();
      assert.ok(!page.url().endsWith("/groups"), "the address stays where it was");
      await shot(page, "desktop-load-failure");
      await page.unroute(groupsChunk);
      await failure.getByRole("button", { name: "重试" }).click();
      await page.locator("#page-header h1", { hasText: "群" }).waitFor();
      await page.waitForURL(/\/groups$/);
      await failure.waitFor({ state: "detached" });

      // Filters, page and page size live in the address: reload and Back keep them.
      await openMenu(page, "端");
      await formItem(page.locator(".filter-bar"), "搜索").locator("input").fill("dev-1");
      await page.getByRole("button", { name: "查询" }).click();
      await page.waitForURL(/\/endpoints\?q=dev-1$/);
      await page.getByRole("link", { name: "dev-10" }).waitFor();
      await page.reload();
      await page.getByRole("link", { name: "dev-12" }).waitFor();
      assert.equal(
        await formItem(page.locator(".filter-bar"), "搜索").locator("input").inputValue(),
        "dev-1",
      );
      assert.equal(await page.getByRole("link", { name: "dev-00" }).count(), 0);
      await page.goto(`${t.adminUrl}/endpoints?size=20`);
      await page.locator(".n-pagination-item", { hasText: "2" }).click();
      await page.waitForURL(/page=2/);
      await page.getByRole("link", { name: "sender" }).waitFor();
      await page.getByRole("link", { name: "sender" }).click();
      await page.locator("#page-header h1", { hasText: "端 sender" }).waitFor();
      await page.getByRole("button", { name: "‹ 返回" }).click();
      await page.waitForURL(/\/endpoints\?(?=.*page=2)(?=.*size=20)/);
      await page.getByRole("link", { name: "sender" }).waitFor();
      assert.equal(await page.getByRole("link", { name: "dev-00" }).count(), 0, "still page 2");

      // A one-day range is that whole day (the picker gives midnight to midnight).
      const today = new Date();
      const day = `${today.getFullYear()}-${String(today.getMonth() + 1).padStart(2, "0")}-${
        String(today.getDate()).padStart(2, "0")
      }`;
      await page.goto(`${t.adminUrl}/messages?from=${day}&to=${day}`);
      await page.locator(".n-data-table-tr", { hasText: "seed-group" }).waitFor();
      assert.equal(await page.locator(".n-data-table-tbody .n-data-table-tr").count(), 4);
      assert.equal(await page.locator(".n-date-picker input").first().inputValue(), day);
      await page.getByRole("button", { name: "只看未完成" }).click();
      await page.waitForURL(/state=scheduled%2Cdispatched|state=scheduled,dispatched/);
      await page.locator(".n-data-table-tr", { hasText: "seed-1" }).getByRole("link").click();
      await page.locator("#page-header h1", { hasText: "消息记录 #" }).waitFor();
      await page.goBack();
      await page.waitForURL(/\/messages\?(?=.*from=)(?=.*state=)/);
      await page.locator(".n-data-table-tr", { hasText: "seed-1" }).waitFor();

      // Settings: the real port, and every label in Chinese.
      await openMenu(page, "运行参数");
      await page.getByTestId("listen").getByText(`127.0.0.1:${t.port}`).waitFor();
      await page.getByText("SQLite 同步写盘级别").waitFor();
      assert.equal(await page.getByText("SQLite synchronous").count(), 0);

      // After 踢下线 the detail page follows the device back online by itself.
      let device = (await online(t.wsUrl, "dev-05", PW)).client;
      devices.push(device);
      await page.goto(`${t.adminUrl}/endpoints/dev-05`);
      const onlineRow = page.locator(".n-descriptions-table-row", { hasText: "在线" }).first();
      await onlineRow.getByText("在线", { exact: true }).nth(1).waitFor();
      await page.getByRole("button", { name: "踢下线" }).click();
      await confirmDialog(page, "踢下线");
      await device.until(() => device.closed, "the kicked connection closes");
      await page.locator(".n-descriptions").getByText("离线", { exact: true }).waitFor();
      device = (await online(t.wsUrl, "dev-05", PW)).client;
      devices.push(device);
      await page.locator(".n-descriptions").getByText("在线", { exact: true }).nth(1).waitFor({
        timeout: 15_000,
      });

      // Registration: 生成安全码 keeps an unsaved switch; the code can be copied.
      await openMenu(page, "注册设置");
      await page.getByText("注册已关闭").waitFor();
      await page.getByTestId("registration-enabled").click();
      await page.getByRole("button", { name: "生成安全码" }).click();
      await page.locator(".n-dialog", { hasText: "同时保存「开启注册：开」" }).waitFor();
      await confirmDialog(page, "生成");
      await page.getByText("注册已开启").waitFor();
      const reg = await api.get("/api/admin/registration");
      assert.equal(reg.data.enabled, true, "the switch was saved with the new code");
      assert.equal(String(reg.data.code).length, 16);
      await page.locator(".n-card").getByRole("button", { name: "复制" }).click();
      await page.getByText("已复制安全码").waitFor();
      const copied = await page.evaluate(() =>
        (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } })
          .navigator.clipboard.readText()
      );
      assert.equal(copied, reg.data.code);
      await shot(page, "desktop-registration-copied");

      // Password page: a new validation error replaces the old alert.
      await openMenu(page, "修改密码");
      const pwForm = page.locator(".n-card");
      await formItem(pwForm, "当前密码").locator("input").fill("not-the-password");
      await formItem(pwForm, "新密码").locator("input").fill("new-admin-password-1");
      await formItem(pwForm, "再输一次").locator("input").fill("new-admin-password-1");
      await page.locator("#page-header").getByRole("button", { name: "保存" }).click();
      const wrong = page.locator(".n-alert", { hasText: "当前密码不对" });
      await wrong.waitFor();
      await formItem(pwForm, "再输一次").locator("input").fill("something-else-12");
      await page.locator("#page-header").getByRole("button", { name: "保存" }).click();
      await pwForm.getByText("两次输入不一致").waitFor();
      await wrong.waitFor({ state: "detached" });

      // The session expires while a form is filled: log in again over it and nothing is lost.
      await openMenu(page, "端");
      await page.getByRole("button", { name: "开通端" }).click();
      const create = modal(page, "开通端");
      await formItem(create, "编号").locator("input").fill("kept-1");
      await formItem(create, "名称").locator("input").fill("填好的表单");
      await context.clearCookies();
      await create.getByRole("button", { name: "开通", exact: true }).click();
      const relogin = page.getByTestId("relogin");
      await relogin.getByText("登录已过期，请重新登录").waitFor();
      assert.equal(await formItem(create, "编号").locator("input").inputValue(), "kept-1");
      await shot(page, "desktop-session-expired");
      await relogin.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
      await relogin.getByRole("button", { name: "登录", exact: true }).click();
      await create.getByTestId("secret-value").waitFor();
      await create.getByRole("button", { name: "完成" }).click();
      await confirmDialog(page, "已保存，关闭");
      const kept = await api.get("/api/admin/endpoints/kept-1");
      assert.equal((kept.data.item as { name: string }).name, "填好的表单");

      // Another session changes the admin password: the same dialog, with the new password.
      const other = new AdminClient(t.adminUrl);
      await other.login();
      const changed = await other.post("/api/admin/password", {
        old_password: ADMIN_PASSWORD,
        new_password: "changed-elsewhere-1",
      });
      assert.equal(changed.status, 200, changed.text);
      await formItem(page.locator(".filter-bar"), "搜索").locator("input").fill("kept");
      await page.getByRole("button", { name: "查询" }).click();
      await relogin.getByText("登录已过期，请重新登录").waitFor();
      await relogin.getByPlaceholder("管理员密码").fill("changed-elsewhere-1");
      await relogin.getByRole("button", { name: "登录", exact: true }).click();
      await relogin.waitFor({ state: "detached" });
      await page.getByRole("link", { name: "kept-1" }).waitFor();
      assert.equal(await page.getByRole("link", { name: "dev-00" }).count(), 0);

      assert.deepEqual(problems, [], "no script errors or refused resources");
    } catch (err) {
      const p = context.pages()[0];
      await shot(p, "failed-behaviour").catch(() => undefined);
      throw new Error(`at ${p?.url()}: ${err}`);
    } finally {
      for (const d of devices) await d.close().catch(() => undefined);
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});

Deno.test({
  name: "the overview's live charts and cards move while traffic flows",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer({}, { historyIntervalMs: 1000 });
    const api = new AdminClient(t.adminUrl);
    const { context, dir } = await launch();
    const clients: { close(): Promise<void> }[] = [];
    try {
      await api.login();
      await t.createEndpoint("a", PW);
      await t.createEndpoint("b", PW);
      const page = context.pages()[0] ?? await context.newPage();
      const problems = watchProblems(page);
      await login(page, t.adminUrl);
      await page.getByText("每秒提交").waitFor();
      const points = page.getByTestId("chart-rate");
      const pointsNow = async () => Number(await points.getAttribute("data-points"));
      const submitted = page.getByTestId("submitted-hour");
      assert.equal(await submitted.textContent(), "0");
      const before = await pointsNow();

      const a = (await online(t.wsUrl, "a", PW)).client;
      clients.push(a);
      const b = (await online(t.wsUrl, "b", PW)).client;
      clients.push(b);
      for (let i = 0; i < 5; i++) {
        const sent = await a.request({
          type: "send",
          id: `live-${i}`,
          to: { kind: "endpoint", id: "b" },
          body: { enc: "utf8", data: "hello" },
          delay_ms: 0,
        });
        assert.equal(sent.ok, true, JSON.stringify(sent));
        await b.waitFrame((f) => f.type === "msg" && f.id === `live-${i}`, `msg live-${i}`);
        assert.equal((await b.request({ type: "ack", from: "a", id: `live-${i}` })).ok, true);
      }
      // Nothing is clicked: the page polls and the figures follow.
      await page.getByTestId("submitted-hour").getByText("5", { exact: true }).waitFor({
        timeout: 15_000,
      });
      await page.getByTestId("delivered-hour").getByText("5", { exact: true }).waitFor({
        timeout: 15_000,
      });
      await page.getByTestId("card-online").getByText("2", { exact: true }).waitFor();
      const after = await pointsNow();
      assert.ok(after > before, `the charts gained samples: ${before} -> ${after}`);
      await page.waitForFunction(
        (n) =>
          Number(
            (globalThis as unknown as {
              document: { querySelector(s: string): { getAttribute(a: string): string } | null };
            }).document.querySelector("[data-testid=chart-rate]")?.getAttribute("data-points"),
          ) > n,
        after,
        { timeout: 10_000 },
      );
      assert.equal(await page.locator("[data-testid^=chart-] canvas").count(), 6, "six charts");
      await shot(page, "desktop-overview-live");
      await page.setViewportSize(PHONE);
      await shot(page, "phone-overview-live");
      assert.deepEqual(problems, [], "no script errors or refused resources");
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});
