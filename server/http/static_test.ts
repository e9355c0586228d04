import assert from "node:assert/strict";
import { request } from "node:http";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { fetchHttp, memoryLog } from "../net/_test_util.ts";
import { createRouter, type Route, type Scope } from "./router.ts";
import { staticHandler, WEB_DIST } from "./static.ts";
import { withApp } from "./_test_server.ts";

const INDEX = '<!doctype html><html lang="zh-CN"><body><div id="app"></div></body></html>';
const SCRIPT = `console.log("控制台");${" ".repeat(4096)}`;

/** A small web/dist look-alike in a temp dir, beside a secret that must never be served. */
async function makeDist(): Promise<{ root: string; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-static-" });
  const root = join(dir, "dist");
  await Deno.mkdir(join(root, "assets"), { recursive: true });
  await Deno.writeTextFile(join(root, "index.html"), INDEX);
  await Deno.writeTextFile(join(root, "assets", "index-AbC123.js"), SCRIPT);
  await Deno.writeTextFile(join(root, "assets", "index-AbC123.css"), "body{margin:0}");
  await Deno.writeTextFile(join(root, "favicon.svg"), "<svg/>");
  await Deno.writeTextFile(join(root, ".hidden"), "hidden");
  await Deno.writeTextFile(join(dir, "secret.txt"), "secret");
  return { root, dir };
}

const API: Route[] = [
  { method: "GET", path: "/api/admin/me", scope: "admin", handler: (c) => c.json(200, {}) },
];

async function withDist(
  body: (port: number, root: string) => Promise<void>,
  scopes?: ReadonlySet<Scope>,
): Promise<void> {
  const { root, dir } = await makeDist();
  const app = createRouter(API, {
    log: memoryLog().log,
    fallbacks: { admin: staticHandler({ root }) },
  });
  try {
    await withApp(app, (port) => body(port, root), scopes);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function rawGet(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: Uint8Array }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, headers: { Connection: "close", ...headers }, agent: false },
      (res) => {
        const chunks: Uint8Array[] = [];
        res.on("data", (c: Uint8Array) => chunks.push(c));
        res.on("end", () => {
          const size = chunks.reduce((n, c) => n + c.byteLength, 0);
          const body = new Uint8Array(size);
          let at = 0;
          for (const c of chunks) {
            body.set(c, at);
            at += c.byteLength;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

Deno.test("the console's index.html is served for / and for unknown console paths", async () => {
  await withDist(async (port) => {
    for (const path of ["/", "/endpoints", "/endpoints/door.1", "/groups/g_1?x=1", "/.a/b"]) {
      const r = await fetchHttp(port, path);
      assert.equal(r.status, 200, path);
      assert.equal(r.text, INDEX, path);
      assert.equal(r.headers["content-type"], "text/html; charset=utf-8");
      assert.equal(r.headers["cache-control"], "no-cache");
      assert.equal(r.headers["x-frame-options"], "DENY");
      assert.match(String(r.headers["content-security-policy"]), /frame-ancestors 'none'/);
    }
  });
});

Deno.test("hashed assets are immutable and other files revalidate, with their content types", async () => {
  await withDist(async (port) => {
    const js = await fetchHttp(port, "/assets/index-AbC123.js");
    assert.equal(js.status, 200);
    assert.equal(js.text, SCRIPT);
    assert.equal(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(js.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(js.headers["x-content-type-options"], "nosniff");

    const css = await fetchHttp(port, "/assets/index-AbC123.css");
    assert.equal(css.headers["content-type"], "text/css; charset=utf-8");

    const svg = await fetchHttp(port, "/favicon.svg");
    assert.equal(svg.headers["content-type"], "image/svg+xml");
    assert.equal(svg.headers["cache-control"], "no-cache");
  });
});

Deno.test("missing assets are 404, not the page", async () => {
  await withDist(async (port) => {
    for (const path of ["/assets/gone-123.js", "/assets/", "/favicon.ico", "/assets"]) {
      const r = await fetchHttp(port, path);
      assert.equal(r.status, 404, path);
      assert.equal((r.json as { error: { code: string } }).error.code, "not_found");
    }
  });
});

Deno.test("nothing outside web/dist and no dot file is ever served", async () => {
  await withDist(async (port) => {
    for (
      const path of [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/%2e%2e%2f%2e%2e%2fsecret.txt",
        "/assets/..%2F..%2Fsecret.txt",
        "/.hidden",
        "/assets/..%5C..%5Csecret.txt",
      ]
    ) {
      const r = await fetchHttp(port, path);
      assert.ok(!r.text.includes("secret") && !r.text.includes("hidden"), path);
      assert.ok(r.status === 404 || r.status === 400 || r.text === INDEX, `${path}: ${r.status}`);
    }
    const bad = await fetchHttp(port, "/%E0%A4%A");
    assert.equal(bad.status, 400);
  });
});

Deno.test("API paths keep their JSON 404 and other methods get 405", async () => {
  await withDist(async (port) => {
    const api = await fetchHttp(port, "/api/admin/nope");
    assert.equal(api.status, 404);
    assert.equal((api.json as { error: { code: string } }).error.code, "not_found");
    assert.equal((await fetchHttp(port, "/api/admin/me")).status, 200);

    const post = await fetchHttp(port, "/endpoints", { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, "GET, HEAD");
  });
});

Deno.test("the console exists only where the admin scope is served", async () => {
  await withDist(async (port) => {
    const r = await fetchHttp(port, "/");
    assert.equal(r.status, 404);
    assert.equal((r.json as { error: { code: string } }).error.code, "not_found");
  }, new Set<Scope>(["client", "health"]));
});

Deno.test("ETags answer 304, HEAD has no body, and gzip is used when accepted", async () => {
  await withDist(async (port) => {
    const first = await rawGet(port, "/assets/index-AbC123.js", {});
    const etag = String(first.headers.etag);
    assert.match(etag, /^W\/".+"$/);
    const again = await rawGet(port, "/assets/index-AbC123.js", { "If-None-Match": etag });
    assert.equal(again.status, 304);
    assert.equal(again.body.byteLength, 0);

    const head = await fetchHttp(port, "/", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.equal(Number(head.headers["content-length"]), new TextEncoder().encode(INDEX).length);

    const zipped = await rawGet(port, "/assets/index-AbC123.js", { "Accept-Encoding": "gzip" });
    assert.equal(zipped.headers["content-encoding"], "gzip");
    assert.equal(zipped.headers.vary, "Accept-Encoding");
    assert.equal(new TextDecoder().decode(gunzipSync(zipped.body)), SCRIPT);
    const refused = await rawGet(port, "/assets/index-AbC123.js", {
      "Accept-Encoding": "gzip;q=0",
    });
    assert.equal(refused.headers["content-encoding"], undefined);
  });
});

Deno.test("a file changed on disk is served fresh", async () => {
  await withDist(async (port, root) => {
    assert.equal((await fetchHttp(port, "/")).text, INDEX);
    await Deno.writeTextFile(join(root, "index.html"), "<!doctype html><p>新</p>");
    assert.equal((await fetchHttp(port, "/")).text, "<!doctype html><p>新</p>");
  });
});

Deno.test("without a build the fallback says how to build the console", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-static-" });
  const app = createRouter([], {
    log: memoryLog().log,
    fallbacks: { admin: staticHandler({ root: join(dir, "dist") }) },
  });
  try {
    await withApp(app, async (port) => {
      const r = await fetchHttp(port, "/");
      assert.equal(r.status, 404);
      assert.match((r.json as { error: { message: string } }).error.message, /build:web/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the default root is web/dist of this checkout", () => {
  assert.equal(WEB_DIST, join(import.meta.dirname ?? "", "..", "..", "web", "dist"));
});
