// The console's 节点 page (issue 30 item 6) in a real browser: a single node shows itself, at
// 390×844 nothing is wider than the screen; two real cluster nodes (`nixmsg serve` on one
// PostgreSQL and one nats-server) both show, with their addresses and the answering node marked.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { ADMIN_PASSWORD, startAdminServer } from "../helpers/admin.ts";
import { startCluster } from "../helpers/cluster.ts";
import { online } from "../helpers/client.ts";
import { PW } from "../helpers/messaging.ts";
import { NATS_SKIP_REASON } from "../helpers/nats_server.ts";
import { PG_SKIP_REASON } from "../../server/store/postgres/_testing.ts";
import {
  CHROMIUM,
  DESKTOP,
  ensureBuilt,
  HAS_CHROMIUM,
  launch,
  PHONE,
  shot,
  SHOTS,
} from "../helpers/browser.ts";

if (!HAS_CHROMIUM) console.warn(`SKIPPED tests/e2e/console_nodes_test.ts: ${CHROMIUM} is missing`);
const CLUSTER_SKIP = PG_SKIP_REASON ?? NATS_SKIP_REASON;

type PageGlobal = { document: { documentElement: { scrollWidth: number } } };

async function login(page: Page, base: string, path: string): Promise<void> {
  await page.goto(`${base}${path}`);
  await page.getByPlaceholder("管理员密码").fill(ADMIN_PASSWORD);
  await page.getByRole("button", { name: "登录" }).click();
  await page.locator("#page-header h1", { hasText: "节点" }).waitFor();
}

/** Fails unless the page is no wider than `width` and every node card fits on screen. */
async function checkFits(page: Page, width: number, name: string): Promise<void> {
  const docWidth = await page.evaluate(() =>
    (globalThis as unknown as PageGlobal).document.documentElement.scrollWidth
  );
  assert.ok(docWidth <= width, `${name}: the page is ${docWidth}px wide`);
  const cards = page.getByTestId("node-card");
  for (let i = 0; i < await cards.count(); i++) {
    const b = await cards.nth(i).boundingBox();
    assert.ok(b !== null && b.x >= 0 && b.x + b.width <= width + 1, `${name}: card ${i} fits`);
  }
}

Deno.test({
  name: "the 节点 page shows a single node itself, on a phone and a desktop",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const t = await startAdminServer();
    const { context, dir } = await launch();
    try {
      const page = context.pages()[0] ?? await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      await page.setViewportSize(PHONE);
      await login(page, t.adminUrl, "/nodes");
      assert.equal(await page.title(), "节点 - NixMsg 管理后台");
      await page.getByTestId("single-node").waitFor();
      const cards = page.getByTestId("node-card");
      await cards.first().waitFor();
      assert.equal(await cards.count(), 1);
      const address = new URL(t.wsUrl).host;
      assert.equal(await cards.first().getByTestId("node-address").innerText(), address);
      await cards.first().getByText("当前节点").waitFor();
      await cards.first().getByText("无租约（单节点）").waitFor();
      await checkFits(page, PHONE.width, "phone");
      await shot(page, "phone-nodes");
      // The menu names the page.
      await page.getByTestId("menu-button").click();
      await page.locator(".n-drawer").getByRole("link", { name: "节点", exact: true }).waitFor();
      await page.keyboard.press("Escape");
      await page.setViewportSize(DESKTOP);
      await checkFits(page, DESKTOP.width, "desktop");
      await shot(page, "desktop-nodes");
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
      await t.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});

Deno.test({
  name: "the 节点 page of a two-node cluster lists both nodes and marks the one that answers",
  ignore: !HAS_CHROMIUM || CLUSTER_SKIP !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await ensureBuilt();
    await Deno.mkdir(SHOTS, { recursive: true });
    const cl = await startCluster(2, ["a"]);
    const { context, dir } = await launch();
    try {
      // One MQTT connection on node 2: its lease reports it at the next renewal (every 5 s).
      const a = (await online(cl.url(1), "a", PW)).client;
      const page = context.pages()[0] ?? await context.newPage();
      await page.setViewportSize(PHONE);
      await login(page, `http://${cl.nodes[0]!.addr}`, "/nodes");
      const card = (id: string) =>
        page.getByTestId("node-card").filter({ has: page.getByText(id, { exact: true }) });
      await card("node-1").waitFor();
      await card("node-2").waitFor();
      assert.equal(await page.getByTestId("single-node").count(), 0);
      assert.equal(
        await card("node-1").getByTestId("node-address").innerText(),
        cl.nodes[0]!.addr,
      );
      assert.equal(
        await card("node-2").getByTestId("node-address").innerText(),
        cl.nodes[1]!.addr,
      );
      await card("node-1").getByText("当前节点").waitFor();
      assert.equal(await card("node-2").getByText("当前节点").count(), 0);
      await card("node-2").getByText("在线").waitFor();
      // The page refreshes itself every 5 s; the count arrives with a renewal.
      await card("node-2").getByTestId("node-connections").getByText("1", { exact: true })
        .waitFor({ timeout: 20_000 });
      await checkFits(page, PHONE.width, "cluster phone");
      await shot(page, "phone-nodes-cluster");
      await a.close();
    } finally {
      await context.close();
      await cl.close();
      await Deno.remove(dir, { recursive: true }).catch(() => undefined);
    }
  },
});
