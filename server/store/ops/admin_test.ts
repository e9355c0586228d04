import assert from "node:assert/strict";
import { OpError } from "../op_error.ts";
import { addEndpoint, codeOf, countRows, T0, testDb } from "./_testing.ts";
import {
  createSession,
  createToken,
  deleteSession,
  deleteToken,
  importEndpoints,
  setAdminPassword,
  setRegistration,
  touchToken,
  updateEndpoint,
  updateToken,
} from "./admin.ts";
import type { CreateEndpointArgs } from "./endpoints.ts";

// spec 8: admin sessions, API tokens, admin endpoint edits, the CSV import, registration.

function row(id: string): CreateEndpointArgs {
  return {
    id,
    name: `n-${id}`,
    remark: "",
    source: "admin",
    loginHash: "$argon2id$x",
    talkHash: null,
    defaultDelayMs: 0,
  };
}

Deno.test("a new admin session is stored by hash and drops expired sessions", () => {
  const db = testDb();
  createSession(db, { tokenHash: "old", expiresAt: T0 + 10 }, T0);
  createSession(db, { tokenHash: "new", expiresAt: T0 + 1000 }, T0 + 10);
  const hashes = db.prepare("SELECT token_hash FROM admin_sessions").all().map((r) => r.token_hash);
  assert.deepEqual(hashes, ["new"], "the session that expired at T0+10 is gone");
  assert.deepEqual(deleteSession(db, { tokenHash: "new" }, T0), { deleted: true });
  assert.deepEqual(deleteSession(db, { tokenHash: "new" }, T0), { deleted: false });
});

Deno.test("setting the admin password keeps only the caller's session", () => {
  const db = testDb();
  for (const h of ["mine", "other1", "other2"]) {
    createSession(db, { tokenHash: h, expiresAt: T0 + 1000 }, T0);
  }
  assert.deepEqual(setAdminPassword(db, { passwordHash: "phc", keepSessionHash: "mine" }, T0), {
    sessionsEnded: 2,
  });
  assert.equal(countRows(db, "admin_sessions"), 1);
  const v = db.prepare("SELECT value, updated_at FROM settings WHERE key = 'admin_password_hash'")
    .get() as { value: string; updated_at: number };
  assert.deepEqual([v.value, v.updated_at], ["phc", T0]);
});

Deno.test("tokens: unique names, rename, enable and disable, delete, not_found for unknown ids", () => {
  const db = testDb();
  createToken(db, { id: "t1", name: "a", tokenHash: "h1" }, T0);
  assert.equal(
    codeOf(() => createToken(db, { id: "t2", name: "a", tokenHash: "h2" }, T0)),
    "conflict",
  );
  createToken(db, { id: "t2", name: "b", tokenHash: "h2" }, T0);
  assert.equal(codeOf(() => updateToken(db, { id: "t2", name: "a" }, T0)), "conflict");
  updateToken(db, { id: "t1", name: "a" }, T0); // its own name is fine
  updateToken(db, { id: "t2", name: "c", enabled: false }, T0);
  const t2 = db.prepare("SELECT name, enabled FROM api_tokens WHERE id = 't2'").get() as {
    name: string;
    enabled: number;
  };
  assert.deepEqual([t2.name, t2.enabled], ["c", 0]);
  assert.equal(codeOf(() => updateToken(db, { id: "zz", enabled: true }, T0)), "not_found");
  deleteToken(db, { id: "t2" }, T0);
  assert.equal(codeOf(() => deleteToken(db, { id: "t2" }, T0)), "not_found");
});

Deno.test("a token touch only moves last_used_at forward", () => {
  const db = testDb();
  createToken(db, { id: "t1", name: "a", tokenHash: "h1" }, T0);
  assert.deepEqual(touchToken(db, { id: "t1", usedAt: T0 + 100 }, T0), { changed: true });
  assert.deepEqual(touchToken(db, { id: "t1", usedAt: T0 + 50 }, T0), { changed: false });
  const r = db.prepare("SELECT last_used_at FROM api_tokens WHERE id = 't1'").get() as {
    last_used_at: number;
  };
  assert.equal(r.last_used_at, T0 + 100);
});

Deno.test("the admin's endpoint edit changes only the given fields", () => {
  const db = testDb();
  addEndpoint(db, "e1", { name: "old" });
  updateEndpoint(db, { id: "e1", remark: "r", defaultDelayMs: 5000 }, T0);
  const e = db.prepare("SELECT name, remark, default_delay_ms FROM endpoints WHERE id = 'e1'")
    .get() as { name: string; remark: string; default_delay_ms: number };
  assert.deepEqual([e.name, e.remark, e.default_delay_ms], ["old", "r", 5000]);
  assert.equal(codeOf(() => updateEndpoint(db, { id: "nobody", name: "x" }, T0)), "not_found");
});

Deno.test("an import creates every row, or none when any id exists, naming the taken ids", () => {
  const db = testDb();
  addEndpoint(db, "taken");
  let err: unknown;
  try {
    importEndpoints(db, { rows: [row("a"), row("taken"), row("b")] }, T0);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof OpError);
  assert.equal(err.code, "id_taken");
  assert.deepEqual(err.data, { ids: ["taken"] });
  assert.equal(countRows(db, "endpoints"), 1, "nothing was inserted");
  assert.deepEqual(importEndpoints(db, { rows: [row("a"), row("b")] }, T0), { created: 2 });
  assert.equal(countRows(db, "endpoints", "source = 'admin' AND created_at = ?", String(T0)), 2);
});

Deno.test("registration settings are written together, each only when given", () => {
  const db = testDb();
  setRegistration(db, { enabled: true, code: "code-1234" }, T0);
  setRegistration(db, { enabled: false }, T0 + 5);
  const rows = db.prepare("SELECT key, value, updated_at FROM settings ORDER BY key").all()
    .map((r) => `${r.key}=${r.value}@${Number(r.updated_at) - T0}`);
  assert.deepEqual(rows, ["registration_code=code-1234@0", "registration_enabled=false@5"]);
});
