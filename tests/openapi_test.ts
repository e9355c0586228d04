// The OpenAPI document (issue 16): served open at /api/admin/openapi.json, equal to
// docs/openapi.json, covering exactly the routes the server has, and strict enough that a
// changed answer fails the admin tests (their client validates every reply against it).
import assert from "node:assert/strict";
import { startMetricsHistory } from "../server/metrics/history.ts";
import { adminRoutes } from "../server/admin/routes.ts";
import { openApiText } from "../server/admin/openapi.ts";
import { healthRoutes } from "../server/http/health.ts";
import { registrationRoutes } from "../server/app/registration.ts";
import { metricsRoutes } from "../server/metrics/routes.ts";
import { AdminClient, adminSession, startAdminServer } from "./helpers/admin.ts";
import { openApiChecker } from "./helpers/openapi_check.ts";
import { CONSOLE_TYPES, consoleTypesText } from "../scripts/openapi_types.ts";

Deno.test("docs/openapi.json is the document the server builds (run `deno task openapi`)", async () => {
  const file = await Deno.readTextFile(new URL("../docs/openapi.json", import.meta.url));
  assert.equal(file, openApiText(), "docs/openapi.json is stale: run `deno task openapi`");
});

Deno.test("web/src/api/schema.gen.ts is generated from the document (run `deno task openapi`)", async () => {
  const file = await Deno.readTextFile(CONSOLE_TYPES);
  assert.equal(file, await consoleTypesText(), "schema.gen.ts is stale: run `deno task openapi`");
});

Deno.test("every response schema of the document compiles in Ajv's strict 2020-12 mode", () => {
  assert.ok(openApiChecker().compileAll() > 100);
});

Deno.test("every route of the server is in the document, and every documented route exists", async () => {
  const t = await startAdminServer();
  const { app, mqtt } = t.server;
  // The server always samples its history, so the history route always exists.
  const history = startMetricsHistory(app);
  try {
    const routes = [
      ...healthRoutes({ ready: () => true }),
      ...registrationRoutes(app),
      ...adminRoutes(app, mqtt, history),
      ...metricsRoutes(app),
    ];
    const served = new Set(
      routes.map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    const doc = openApiChecker().doc;
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) documented.add(`${method} ${path}`);
    }
    assert.deepEqual([...served].filter((r) => !documented.has(r)), [], "routes not documented");
    assert.deepEqual([...documented].filter((r) => !served.has(r)), [], "documented, not served");
    assert.ok(served.size >= 40, `only ${served.size} routes`);
  } finally {
    history.close();
    await t.close();
  }
});

Deno.test("GET /api/admin/openapi.json needs no login and serves the document", async () => {
  const t = await startAdminServer();
  try {
    const anonymous = new AdminClient(t.adminUrl);
    const r = await anonymous.get("/api/admin/openapi.json");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, openApiText());
    assert.equal(r.json?.openapi, "3.1.0");
  } finally {
    await t.close();
  }
});

Deno.test("the checker refuses an extra field, a wrong type, an undocumented status or code", async () => {
  const { t, admin } = await adminSession();
  try {
    const c = openApiChecker();
    const me = await admin.get("/api/admin/me");
    const good = JSON.parse(me.text);
    const json = "application/json; charset=utf-8";
    assert.equal(c.check("GET", "/api/admin/me", 200, json, me.text), null);
    const extra = { ok: true, data: { ...good.data, password: "x" } };
    assert.match(c.check("GET", "/api/admin/me", 200, json, JSON.stringify(extra)) ?? "", /must/);
    const wrongType = { ok: true, data: { ...good.data, expires_at: "soon" } };
    assert.notEqual(c.check("GET", "/api/admin/me", 200, json, JSON.stringify(wrongType)), null);
    assert.match(c.check("GET", "/api/admin/me", 418, json, me.text) ?? "", /not documented/);
    const notFound = JSON.stringify({ ok: false, error: { code: "conflict", message: "x" } });
    assert.notEqual(c.check("GET", "/api/admin/endpoints/x", 404, json, notFound), null);
    assert.match(c.check("GET", "/api/admin/nothing-here", 200, json, "{}") ?? "", /undocumented/);
  } finally {
    await t.close();
  }
});

Deno.test("the health checks, /metrics and the registration answer as documented", async () => {
  const t = await startAdminServer({ metrics: { token: "metrics-token-1" } });
  try {
    // AdminClient validates each answer against the document; the statuses pin the branches.
    const c = new AdminClient(t.httpUrl);
    assert.equal((await c.get("/healthz")).status, 200);
    assert.equal((await c.get("/readyz")).status, 200);
    assert.equal((await c.get("/metrics")).status, 401);
    const metrics = await c.get("/metrics", {
      headers: { Authorization: "Bearer metrics-token-1" },
    });
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /nixmsg_info/);
    const closed = await c.post("/api/client/register", { registration_code: "x" });
    assert.equal(closed.code, "registration_closed");
    assert.equal((await c.call("OPTIONS", "/api/client/register")).status, 204);
    await t.setSetting("registration_code", "code-1234-abcd");
    await t.setSetting("registration_enabled", "true");
    const made = await c.post("/api/client/register", { registration_code: "code-1234-abcd" });
    assert.equal(made.status, 200, made.text);
    assert.equal(typeof made.data.login_password, "string");
    const wrong = await c.post("/api/client/register", { registration_code: "nope" });
    assert.equal(wrong.code, "registration_code_invalid");
  } finally {
    await t.close();
  }
});
