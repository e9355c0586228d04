import assert from "node:assert/strict";
import type { CreateEndpointArgs } from "../ops/endpoints.ts";
import { HEALTH_PROBE_KEY } from "../ops/health.ts";
import { contractTest, countRows, T0 } from "./_stores.ts";

// Admin writes, settings and the readiness probe (spec 8, 4.3) on both stores.

function row(id: string): CreateEndpointArgs {
  return {
    id,
    name: id,
    remark: "",
    source: "admin",
    loginHash: "h",
    talkHash: null,
    defaultDelayMs: 0,
  };
}

contractTest("settings are set, replaced and deleted; the probe writes its own row", async (s) => {
  await s.run("settings.set", { key: "registration_code", value: "one" });
  await s.run("settings.set", { key: "registration_code", value: "two" }, T0 + 1);
  await s.run("health.probe", { token: "tok" }, T0 + 2);
  assert.deepEqual(await s.rows("SELECT key, value, updated_at FROM settings ORDER BY key"), [
    { key: HEALTH_PROBE_KEY, value: "tok", updated_at: T0 + 2 },
    { key: "registration_code", value: "two", updated_at: T0 + 1 },
  ]);
  assert.equal(await s.run("settings.delete", { key: "registration_code" }), true);
  assert.equal(await s.run("settings.delete", { key: "registration_code" }), false);
});

contractTest(
  "admin sessions: expired ones pruned, a password change keeps the caller's",
  async (s) => {
    await s.run("admin.session_create", { tokenHash: "old", expiresAt: T0 + 10 });
    await s.run("admin.session_create", { tokenHash: "mine", expiresAt: T0 + 1000 }, T0 + 20);
    assert.equal(await countRows(s, "admin_sessions"), 1);
    await s.run("admin.session_create", { tokenHash: "other", expiresAt: T0 + 1000 }, T0 + 20);
    assert.deepEqual(
      await s.run("admin.password_set", { passwordHash: "p", keepSessionHash: "mine" }),
      {
        sessionsEnded: 1,
      },
    );
    assert.deepEqual(await s.run("admin.session_delete", { tokenHash: "mine" }), { deleted: true });
    assert.deepEqual(await s.run("admin.session_delete", { tokenHash: "mine" }), {
      deleted: false,
    });
  },
);

contractTest("tokens: unique names, rename, disable, touch forward only, delete", async (s) => {
  await s.run("admin.token_create", { id: "t1", name: "ci", tokenHash: "h1" });
  await s.run("admin.token_create", { id: "t2", name: "ops", tokenHash: "h2" });
  assert.equal(
    await s.codeOf("admin.token_create", { id: "t3", name: "ci", tokenHash: "h3" }),
    "conflict",
  );
  assert.equal(await s.codeOf("admin.token_update", { id: "t2", name: "ci" }), "conflict");
  assert.equal(await s.codeOf("admin.token_update", { id: "nope", enabled: false }), "not_found");
  await s.run("admin.token_update", { id: "t2", name: "deploy", enabled: false });
  assert.deepEqual(await s.run("admin.token_touch", { id: "t1", usedAt: T0 + 5 }), {
    changed: true,
  });
  assert.deepEqual(await s.run("admin.token_touch", { id: "t1", usedAt: T0 + 1 }), {
    changed: false,
  });
  assert.deepEqual(
    await s.rows("SELECT id, name, enabled, last_used_at FROM api_tokens ORDER BY id"),
    [
      { id: "t1", name: "ci", enabled: 1, last_used_at: T0 + 5 },
      { id: "t2", name: "deploy", enabled: 0, last_used_at: null },
    ],
  );
  await s.run("admin.token_delete", { id: "t1" });
  assert.equal(await s.codeOf("admin.token_delete", { id: "t1" }), "not_found");
});

contractTest("an import creates every row, or none when any id exists", async (s) => {
  await s.addEndpoint("taken");
  try {
    await s.run("admin.endpoint_import", { rows: [row("n1"), row("taken"), row("n2")] });
    assert.fail("an import with a taken id must be refused");
  } catch (err) {
    assert.equal((err as { code?: string }).code, "id_taken");
    assert.deepEqual((err as { data?: unknown }).data, { ids: ["taken"] });
  }
  assert.equal(await countRows(s, "endpoints"), 1);
  assert.deepEqual(await s.run("admin.endpoint_import", { rows: [row("n1"), row("n2")] }), {
    created: 2,
  });
  assert.equal(await countRows(s, "endpoints"), 3);
});

contractTest(
  "the admin's endpoint edit and the registration settings change only what is given",
  async (s) => {
    await s.addEndpoint("e", { name: "old" });
    await s.run("admin.endpoint_update", { id: "e", remark: "r", defaultDelayMs: 50 });
    assert.deepEqual(await s.rows("SELECT name, remark, default_delay_ms FROM endpoints"), [
      { name: "old", remark: "r", default_delay_ms: 50 },
    ]);
    assert.equal(await s.codeOf("admin.endpoint_update", { id: "nope", name: "x" }), "not_found");
    await s.run("admin.registration_set", { enabled: true });
    await s.run("admin.registration_set", { code: "abc" });
    assert.deepEqual(await s.rows("SELECT key, value FROM settings ORDER BY key"), [
      { key: "registration_code", value: "abc" },
      { key: "registration_enabled", value: "true" },
    ]);
  },
);
