// The browser side of the console tests: Debian's chromium through playwright-core (DESIGN 8),
// a fresh build of web/dist, and waits on what the page shows. Not a test file itself.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { WEB_DIST } from "../../server/http/static.ts";

export const CHROMIUM = "/usr/bin/chromium";
const ROOT = join(import.meta.dirname ?? ".", "..", "..");
export const SHOTS = join(import.meta.dirname ?? ".", "..", "e2e", "screenshots");
export const HAS_CHROMIUM = existsSync(CHROMIUM);

/** The newest modification time of a file under `dir`, build output and packages left out. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of Deno.readDirSync(dir)) {
    if (e.name === "dist" || e.name === "node_modules") continue;
    const path = join(dir, e.name);
    const t = e.isDirectory ? newestSource(path) : Deno.statSync(path).mtime?.getTime() ?? 0;
    if (t > newest) newest = t;
  }
  return newest;
}

/**
 * Builds web/dist when it is missing or older than a file under web/ (`deno task build:web`
 * normally runs first), so a test run from a working copy never drives a stale console.
 */
export async function ensureBuilt(): Promise<void> {
  const index = join(WEB_DIST, "index.html");
  if (existsSync(index)) {
    const built = Deno.statSync(index).mtime?.getTime() ?? 0;
    if (built >= newestSource(join(ROOT, "web"))) return;
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "build:web"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`deno task build:web failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launch(): Promise<{ context: BrowserContext; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-chromium-" });
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: DESKTOP,
    locale: "zh-CN",
    acceptDownloads: true,
  });
  return { context, dir };
}

export async function shot(page: Page, name: string): Promise<void> {
  await still(page);
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/**
 * Waits until the page has painted twice and no finite CSS transition or animation is running
 * (modals, drawers, the table's loading mask). Spinners loop forever and are not waited for.
 */
export async function still(page: Page): Promise<void> {
  await page.evaluate(() =>
    new Promise<void>((resolve) => {
      const g = globalThis as unknown as { requestAnimationFrame(cb: () => void): number };
      const raf = (cb: () => void) => g.requestAnimationFrame(cb);
      raf(() => raf(() => resolve()));
    })
  );
  await page.waitForFunction(
    () => {
      const doc = (globalThis as unknown as {
        document: {
          getAnimations(): {
            playState: string;
            effect: { getTiming(): { iterations?: number } } | null;
          }[];
        };
      }).document;
      return doc.getAnimations().every((a) =>
        a.playState !== "running" || a.effect?.getTiming().iterations === Infinity
      );
    },
    undefined,
    { timeout: 10_000 },
  );
}

/** Opens a page from the side menu and waits for its title in the fixed header. */
export async function openMenu(page: Page, label: string, title = label): Promise<void> {
  await page.locator(".n-layout-sider").getByRole("link", { name: label, exact: true }).click();
  await page.locator("#page-header h1", { hasText: title }).waitFor();
}

export function modal(page: Page, title: string) {
  return page.locator(".n-modal", { has: page.locator(".n-card-header", { hasText: title }) });
}

export function formItem(scope: ReturnType<Page["locator"]>, label: string) {
  return scope.locator(".n-form-item", {
    has: scope.page().locator(".n-form-item-label", { hasText: label }),
  });
}

export async function confirmDialog(page: Page, button: string): Promise<void> {
  await page.locator(".n-dialog").getByRole("button", { name: button }).click();
  await page.locator(".n-dialog").waitFor({ state: "detached" });
}
