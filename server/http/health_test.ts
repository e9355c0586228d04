import assert from "node:assert/strict";
import { silentLogger } from "../log/log.ts";
import { fetchHttp } from "../net/_test_util.ts";
import { healthRoutes } from "./health.ts";
import { createRouter } from "./router.ts";
import { withApp } from "./_test_server.ts";

Deno.test("/healthz answers 200 ok and /readyz follows ready()", async () => {
  let ready = false;
  const app = createRouter(healthRoutes({ ready: () => ready }), { log: silentLogger });
  await withApp(app, async (port) => {
    const health = await fetchHttp(port, "/healthz");
    assert.equal(health.status, 200);
    assert.deepEqual(health.json, { ok: true });

    const notReady = await fetchHttp(port, "/readyz");
    assert.equal(notReady.status, 503);
    assert.deepEqual((notReady.json as { error: { code: string } }).error.code, "busy");
    assert.equal((notReady.json as { ok: boolean }).ok, false);

    ready = true;
    const isReady = await fetchHttp(port, "/readyz");
    assert.equal(isReady.status, 200);
    assert.deepEqual(isReady.json, { ok: true });

    ready = false;
    assert.equal((await fetchHttp(port, "/readyz")).status, 503);
  });
});

Deno.test("the health checks are health-scope routes, served on every listener", () => {
  const routes = healthRoutes({ ready: () => true });
  assert.deepEqual(routes.map((r) => `${r.method} ${r.path} ${r.scope}`), [
    "GET /healthz health",
    "GET /readyz health",
  ]);
});

Deno.test("/readyz fails while a listener cannot accept connections", async () => {
  let impaired = true;
  const routes = healthRoutes({ ready: () => true, acceptImpaired: () => impaired });
  await withApp(createRouter(routes, { log: silentLogger }), async (port) => {
    const r = await fetchHttp(port, "/readyz");
    assert.equal(r.status, 503);
    assert.match((r.json as { error: { message: string } }).error.message, /accepted/);
    impaired = false;
    assert.equal((await fetchHttp(port, "/readyz")).status, 200);
  });
});
