import assert from "node:assert/strict";
import { createRouter, type Route } from "./router.ts";
import { fetchHttp, memoryLog } from "../net/_test_util.ts";
import { withApp } from "./_test_server.ts";

const LIMIT = 16;

const ROUTES: Route[] = [
  {
    method: "POST",
    path: "/api/client/echo",
    scope: "client",
    handler: async (ctx) => {
      const bytes = await ctx.body(LIMIT);
      ctx.json(200, { length: bytes.byteLength, text: new TextDecoder().decode(bytes) });
    },
  },
  {
    method: "GET",
    path: "/api/client/text",
    scope: "client",
    handler: (ctx) => ctx.json(201, { text: "门口 <b>&</b> é" }),
  },
  {
    method: "GET",
    path: "/api/client/error",
    scope: "client",
    handler: (ctx) => ctx.error(409, "id_taken", "编号已存在"),
  },
];

Deno.test("ctx.body returns a body within the limit", async () => {
  await withApp(createRouter(ROUTES, { log: memoryLog().log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/echo", {
      method: "POST",
      body: "0123456789abcdef",
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { length: 16, text: "0123456789abcdef" });
    const empty = await fetchHttp(port, "/api/client/echo", { method: "POST" });
    assert.deepEqual(empty.json, { length: 0, text: "" });
  });
});

Deno.test("ctx.body answers 413 when Content-Length exceeds the limit", async () => {
  await withApp(createRouter(ROUTES, { log: memoryLog().log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/echo", { method: "POST", body: "x".repeat(17) });
    assert.equal(r.status, 413);
    assert.equal((r.json as { error: { code: string } }).error.code, "bad_request");
    assert.equal(r.headers["connection"], "close");
  });
});

Deno.test("ctx.body answers 413 when a chunked body grows past the limit", async () => {
  await withApp(createRouter(ROUTES, { log: memoryLog().log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/echo", {
      method: "POST",
      headers: { "Transfer-Encoding": "chunked" },
      body: "y".repeat(40),
    });
    assert.equal(r.status, 413);
  });
});

Deno.test("ctx.json sends UTF-8 JSON without escaping non-ASCII or HTML", async () => {
  await withApp(createRouter(ROUTES, { log: memoryLog().log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/text");
    assert.equal(r.status, 201);
    assert.equal(r.headers["content-type"], "application/json; charset=utf-8");
    assert.equal(r.headers["cache-control"], "no-store");
    assert.equal(r.text, '{"text":"门口 <b>&</b> é"}');
  });
});

Deno.test("ctx.error sends the shared error shape", async () => {
  await withApp(createRouter(ROUTES, { log: memoryLog().log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/error");
    assert.equal(r.status, 409);
    assert.deepEqual(r.json, { ok: false, error: { code: "id_taken", message: "编号已存在" } });
  });
});
