import assert from "node:assert/strict";
import { testDb } from "./_testing.ts";
import {
  clearSession,
  createEndpoint,
  setLoginPassword,
  setSession,
  touchSession,
  updateSelf,
} from "./endpoints.ts";
import { OpError } from "../op_error.ts";

const T = 1_750_000_000_000;

function row(db: ReturnType<typeof testDb>, id: string): Record<string, unknown> {
  return db.prepare("SELECT * FROM endpoints WHERE id = ?").get(id) as Record<string, unknown>;
}

function fresh(): ReturnType<typeof testDb> {
  const db = testDb();
  createEndpoint(db, {
    id: "e1",
    name: "门口",
    remark: "",
    source: "self",
    loginHash: "h1",
    talkHash: null,
    defaultDelayMs: 0,
  }, T);
  return db;
}

Deno.test("endpoint.create inserts once and answers id_taken for a repeat", () => {
  const db = fresh();
  assert.equal(row(db, "e1").source, "self");
  assert.equal(row(db, "e1").created_at, T);
  assert.throws(
    () =>
      createEndpoint(db, {
        id: "e1",
        name: "",
        remark: "",
        source: "admin",
        loginHash: "x",
        talkHash: null,
        defaultDelayMs: 0,
      }, T),
    (e: unknown) => e instanceof OpError && e.code === "id_taken",
  );
});

Deno.test("a new session replaces the old hash, a rehash replaces the login hash, logout clears it", () => {
  const db = fresh();
  setSession(db, { id: "e1", sessionHash: "s1" }, T);
  assert.equal(row(db, "e1").session_hash, "s1");
  assert.equal(row(db, "e1").login_hash, "h1");
  setSession(db, { id: "e1", sessionHash: "s2", loginHash: "h2" }, T + 1);
  assert.equal(row(db, "e1").session_hash, "s2");
  assert.equal(row(db, "e1").login_hash, "h2");
  assert.equal(row(db, "e1").session_issued_at, T + 1);
  assert.deepEqual(touchSession(db, { id: "e1", sessionHash: "s1", usedAt: T + 5 }, T), {
    changed: false,
  });
  assert.deepEqual(touchSession(db, { id: "e1", sessionHash: "s2", usedAt: T + 5 }, T), {
    changed: true,
  });
  assert.equal(row(db, "e1").session_used_at, T + 5);
  clearSession(db, { id: "e1" }, T);
  assert.equal(row(db, "e1").session_hash, null);
});

Deno.test("self.login_password swaps the hash and the session together; self.update changes only given fields", () => {
  const db = fresh();
  setLoginPassword(db, { id: "e1", loginHash: "h9", sessionHash: "s9" }, T);
  assert.equal(row(db, "e1").login_hash, "h9");
  assert.equal(row(db, "e1").session_hash, "s9");
  updateSelf(db, { id: "e1", defaultDelayMs: 5000 }, T);
  assert.equal(row(db, "e1").name, "门口");
  assert.equal(row(db, "e1").default_delay_ms, 5000);
  assert.deepEqual(updateSelf(db, { id: "nobody", name: "x" }, T), { changed: false });
});
