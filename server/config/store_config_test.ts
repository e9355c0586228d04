import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ConfigError,
  DEFAULT_CONFIG,
  loadConfig,
  POSTGRES_URL_ENV,
  redactUrl,
  validateConfig,
} from "./config.ts";

function issuesOf(fn: () => unknown): { path: string; reason: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.issues];
    throw err;
  }
  assert.fail("expected a ConfigError");
}

Deno.test("the store defaults to SQLite with no PostgreSQL URL", () => {
  assert.deepEqual(DEFAULT_CONFIG.store, { kind: "sqlite", postgres_url: "" });
  assert.deepEqual(validateConfig({ store: null }).store, DEFAULT_CONFIG.store);
});

Deno.test("store.kind postgres with a postgres:// or postgresql:// URL is accepted", () => {
  for (const url of ["postgres://nixmsg:pw@db:5432/nixmsg", "postgresql://db/nixmsg"]) {
    const c = validateConfig({ store: { kind: "Postgres", postgres_url: url } });
    assert.deepEqual(c.store, { kind: "postgres", postgres_url: url });
  }
});

Deno.test("a store URL that is not postgres:// is named as bad, without its password", () => {
  const issues = issuesOf(() =>
    validateConfig({ store: { kind: "postgres", postgres_url: "mysql://root:s3cret@db/x" } })
  );
  assert.equal(issues.length, 1);
  assert.equal(issues[0].path, "store.postgres_url");
  assert.match(issues[0].reason, /mysql:\/\/root:\*\*\*@db\/x is not a valid database URL/);
  assert.ok(!issues[0].reason.includes("s3cret"), issues[0].reason);
  const garbage = issuesOf(() => validateConfig({ store: { postgres_url: "s3cret garbage" } }));
  assert.equal(garbage[0].path, "store.postgres_url");
  assert.ok(!garbage[0].reason.includes("s3cret"), garbage[0].reason);
});

Deno.test("store.kind postgres without a URL and an unknown kind are refused", () => {
  const missing = issuesOf(() => validateConfig({ store: { kind: "postgres" } }));
  assert.deepEqual(missing.map((i) => i.path), ["store.postgres_url"]);
  assert.match(missing[0].reason, /NIXMSG_POSTGRES_URL/);
  const unknown = issuesOf(() => validateConfig({ store: { kind: "mysql", extra: 1 } }));
  assert.deepEqual(unknown.map((i) => i.path).sort(), ["store.extra", "store.kind"]);
});

Deno.test("NIXMSG_POSTGRES_URL replaces store.postgres_url and is checked under its name", () => {
  const url = "postgres://u:pw@envhost/db";
  const c = validateConfig(
    { store: { kind: "postgres", postgres_url: "postgres://file/db" } },
    { [POSTGRES_URL_ENV]: url },
  );
  assert.equal(c.store.postgres_url, url);
  const bad = issuesOf(() => validateConfig({}, { [POSTGRES_URL_ENV]: "http://u:pw@h/db" }));
  assert.equal(bad[0].path, "store.postgres_url (from NIXMSG_POSTGRES_URL)");
  assert.ok(!bad[0].reason.includes(":pw@"), bad[0].reason);
});

Deno.test("loadConfig() reads NIXMSG_POSTGRES_URL with and without a config file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const url = "postgres://u:pw@h/db";
    const none = await loadConfig({
      NIXMSG_CONFIG: undefined,
      [POSTGRES_URL_ENV]: url,
    });
    // Without NIXMSG_CONFIG the file is ./config.yaml, absent in the test's working directory
    // or not: either way the URL comes from the environment.
    assert.equal(none.config.store.postgres_url, url);
    const path = join(dir, "c.yaml");
    await Deno.writeTextFile(path, "store:\n  kind: postgres\n");
    const { config } = await loadConfig({ NIXMSG_CONFIG: path, [POSTGRES_URL_ENV]: url });
    assert.deepEqual(config.store, { kind: "postgres", postgres_url: url });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("redactUrl() hides the password in the userinfo and in the query", () => {
  assert.equal(redactUrl("postgres://a:b@h:5432/d"), "postgres://a:***@h:5432/d");
  assert.equal(
    redactUrl("postgres://h/d?password=x&sslmode=require"),
    "postgres://h/d?password=***&sslmode=require",
  );
  assert.equal(redactUrl("postgres://a@h/d"), "postgres://a@h/d");
  assert.equal(redactUrl("not a url"), "(not a URL)");
});
