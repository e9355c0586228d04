import assert from "node:assert/strict";
import { closeOf, connectTcp, fetchHttp, memoryLog } from "../net/_test_util.ts";
import { createRouter, HttpError, type Route, type Scope } from "./router.ts";
import { withApp } from "./_test_server.ts";

const echo = (name: string): Route["handler"] => (ctx) =>
  ctx.json(200, { route: name, params: ctx.params, peer: ctx.peer, scopes: [...ctx.scopes] });

const ROUTES: Route[] = [
  { method: "GET", path: "/healthz", scope: "health", handler: echo("health") },
  { method: "POST", path: "/api/client/register", scope: "client", handler: echo("register") },
  { method: "GET", path: "/api/admin/endpoints/import", scope: "admin", handler: echo("import") },
  { method: "GET", path: "/api/admin/endpoints/:id", scope: "admin", handler: echo("endpoint") },
  { method: "DELETE", path: "/api/admin/endpoints/:id", scope: "admin", handler: echo("delete") },
  { method: "GET", path: "/metrics", scope: "admin", handler: echo("metrics") },
];

const CLIENT_SIDE = new Set<Scope>(["client", "health"]);
const ADMIN_SIDE = new Set<Scope>(["admin", "health"]);

interface Body {
  route?: string;
  ok?: boolean;
  error?: { code: string; message: string };
}

function body(r: { json: unknown }): Body {
  return r.json as Body;
}

Deno.test("the router dispatches by method and path and passes decoded params", async () => {
  const app = createRouter(ROUTES, { log: memoryLog().log });
  await withApp(app, async (port) => {
    const r = await fetchHttp(port, "/api/admin/endpoints/e%5F1?x=1");
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      route: "endpoint",
      params: { id: "e_1" },
      peer: { remoteAddress: "127.0.0.1", secure: false },
      scopes: ["client", "admin", "health"],
    });
    const del = await fetchHttp(port, "/api/admin/endpoints/e_1", { method: "DELETE" });
    assert.equal(body(del).route, "delete");
    // Two routes match: the earlier line of the table wins.
    assert.equal(body(await fetchHttp(port, "/api/admin/endpoints/import")).route, "import");
  });
});

Deno.test("an unknown path gets a JSON 404 and a wrong method a 405 with Allow", async () => {
  const app = createRouter(ROUTES, { log: memoryLog().log });
  await withApp(app, async (port) => {
    const missing = await fetchHttp(port, "/api/admin/nothing");
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, {
      ok: false,
      error: { code: "not_found", message: "Not found" },
    });
    assert.match(String(missing.headers["content-type"]), /^application\/json/);

    const wrong = await fetchHttp(port, "/api/admin/endpoints/e1", { method: "PUT" });
    assert.equal(wrong.status, 405);
    assert.equal(body(wrong).error?.code, "bad_request");
    assert.equal(wrong.headers["allow"], "GET, DELETE, HEAD");
  });
});

Deno.test("a GET route also answers HEAD, without a body", async () => {
  const app = createRouter(ROUTES, { log: memoryLog().log });
  await withApp(app, async (port) => {
    const head = await fetchHttp(port, "/healthz", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
  });
});

Deno.test("routes of scopes a listener does not serve are 404 there (spec 4.3)", async () => {
  const app = createRouter(ROUTES, { log: memoryLog().log });
  await withApp(app, async (port) => {
    assert.equal((await fetchHttp(port, "/api/admin/endpoints/e1")).status, 404);
    assert.equal((await fetchHttp(port, "/metrics")).status, 404);
    // Not 405: on this listener the admin route does not exist at all.
    assert.equal((await fetchHttp(port, "/api/admin/endpoints/e1", { method: "PUT" })).status, 404);
    const reg = await fetchHttp(port, "/api/client/register", { method: "POST" });
    assert.equal(body(reg).route, "register");
    assert.equal(body(await fetchHttp(port, "/healthz")).route, "health");
  }, CLIENT_SIDE);
  await withApp(app, async (port) => {
    assert.equal((await fetchHttp(port, "/api/client/register", { method: "POST" })).status, 404);
    assert.equal(body(await fetchHttp(port, "/api/admin/endpoints/e1")).route, "endpoint");
    assert.equal(body(await fetchHttp(port, "/healthz")).route, "health");
  }, ADMIN_SIDE);
});

Deno.test("a throwing handler gets 500 busy, logged, with no stack trace for the client", async () => {
  const { log, lines } = memoryLog();
  const routes: Route[] = [{
    method: "GET",
    path: "/api/client/boom",
    scope: "client",
    handler: () => Promise.reject(new Error("Database is locked at secret.ts:12")),
  }];
  await withApp(createRouter(routes, { log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/boom");
    assert.equal(r.status, 500);
    assert.equal(body(r).error?.code, "busy");
    assert.ok(!r.text.includes("secret.ts"), "no internals in the response");
    const logged = lines.find((l) => l.msg === "HTTP handler failed");
    assert.ok(logged !== undefined);
    assert.match(String(logged.error), /Database is locked/);
    assert.equal(logged.path, "/api/client/boom");
  });
});

Deno.test("a handler throwing HttpError gets its status and code", async () => {
  const { log, lines } = memoryLog();
  const routes: Route[] = [{
    method: "POST",
    path: "/api/client/register",
    scope: "client",
    handler: () => {
      throw new HttpError(403, "registration_closed", "Registration is closed");
    },
  }];
  await withApp(createRouter(routes, { log }), async (port) => {
    const r = await fetchHttp(port, "/api/client/register", { method: "POST" });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, {
      ok: false,
      error: { code: "registration_closed", message: "Registration is closed" },
    });
    assert.equal(lines.filter((l) => l.level === "error").length, 0);
  });
});

Deno.test("unmatched pages go to the admin fallback, but API paths stay 404", async () => {
  const app = createRouter(ROUTES, {
    log: memoryLog().log,
    fallbacks: { admin: (ctx) => ctx.json(200, { route: "console", path: ctx.url.pathname }) },
  });
  await withApp(app, async (port) => {
    assert.deepEqual((await fetchHttp(port, "/endpoints/e1")).json, {
      route: "console",
      path: "/endpoints/e1",
    });
    assert.equal((await fetchHttp(port, "/")).status, 200);
    assert.equal((await fetchHttp(port, "/api/admin/unknown")).status, 404);
    assert.equal((await fetchHttp(port, "/api/client/unknown")).status, 404);
    assert.equal((await fetchHttp(port, "/mqtt")).status, 404);
  });
  await withApp(app, async (port) => {
    // With admin_listen set, the console is not on listen (spec 4.3).
    assert.equal((await fetchHttp(port, "/endpoints/e1")).status, 404);
  }, CLIENT_SIDE);
});

Deno.test("a request target that is not a path gets 400", async () => {
  const app = createRouter(ROUTES, { log: memoryLog().log });
  await withApp(app, async (port) => {
    const socket = await connectTcp(port);
    const reply = closeOf(socket);
    socket.end("GET http://example.com/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.match((await reply).toString(), /^HTTP\/1\.1 400 /);
  });
});
