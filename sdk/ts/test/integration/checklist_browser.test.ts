// Checklist item 14 (spec 9 接入清单, JS only): a page on another origin registers and connects
// over WebSocket, using the built browser bundle in Debian's Chromium.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type BrowserContext, chromium } from "playwright-core";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Harness, SDK_ROOT } from "../helpers/harness.ts";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>NixMsg browser check</title>
<script type="module">
  import { NixMsgClient } from "/nixmsg.js";
  window.checklist14 = async ({ url, code, id, password, peer }) => {
    const reg = await NixMsgClient.register(url, code, { id, loginPassword: password, name: "浏览器" });
    const client = NixMsgClient.connect(url, id, { password });
    const reply = new Promise((resolve) => client.onMessage((m) => resolve(m)));
    const tokens = [];
    client.onSession((t) => tokens.push(t));
    const info = await client.ready();
    const sent = await client.send(peer, "你好 from " + location.origin);
    const m = await reply;
    const self = await client.getSelf();
    await client.close();
    return {
      origin: location.origin,
      registered: reg.id,
      maxBodyBytes: info.maxBodyBytes,
      sentId: sent.id,
      reply: m.body,
      replyFrom: m.from,
      selfName: self.name,
      token: tokens[0] ?? "",
      state: client.state,
    };
  };
  window.ready = true;
</script>`;

let h: Harness;
let page: Server;
let pageOrigin = "";
let browser: BrowserContext;
let profile = "";
before(async () => {
  h = await Harness.start();
  const bundle = readFileSync(join(SDK_ROOT, "dist/browser/nixmsg.js"));
  page = createServer((req, res) => {
    if (req.url === "/nixmsg.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8" });
      res.end(bundle);
    } else if (req.url === "/") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(PAGE);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => page.listen(0, "127.0.0.1", r));
  pageOrigin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
  profile = mkdtempSync(join(tmpdir(), "nixmsg-chromium-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
  });
});
after(async () => {
  await browser?.close();
  await new Promise<void>((r) => (page ? page.close(() => r()) : r()));
  if (profile) rmSync(profile, { recursive: true, force: true });
  await closeAll();
  await h?.stop();
});

test("checklist 14: a page on another origin registers and connects over WebSocket", async () => {
  await h.registration(true, "browser-code-1");
  const peer = await online(h.info.ws_url, await h.endpoint());
  peer.client.onMessage((m) => void peer.client.send(m.from, `echo: ${text(m)}`));
  const tab = await browser.newPage();
  const errors: string[] = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  await tab.goto(`${pageOrigin}/`);
  await tab.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
  const id = `web-${process.pid}`;
  const result = await tab.evaluate(
    (args) =>
      (window as unknown as { checklist14: (a: unknown) => Promise<unknown> }).checklist14(args),
    {
      url: h.info.ws_url,
      code: "browser-code-1",
      id,
      password: "browser-pass-1",
      peer: peer.client.endpointId,
    },
  ) as Record<string, unknown>;
  assert.deepEqual(errors, []);
  assert.notEqual(result.origin, new URL(h.info.http_url).origin, "the page is cross-origin");
  assert.equal(result.registered, id);
  assert.equal(result.maxBodyBytes, 262144);
  assert.equal(result.replyFrom, peer.client.endpointId);
  assert.equal(result.reply, `echo: 你好 from ${pageOrigin}`);
  assert.equal(result.selfName, "浏览器");
  assert.match(String(result.token), /^nst_/);
  assert.equal(result.state, "offline");
  const got = await peer.messages.waitFor((m) => m.id === result.sentId, "the browser's message");
  assert.equal(got.from, id);
});
