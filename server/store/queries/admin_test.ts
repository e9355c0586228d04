import assert from "node:assert/strict";
import { addEndpoint, T0, testDb } from "../ops/_testing.ts";
import { createSession, createToken, setRegistration, touchToken } from "../ops/admin.ts";
import {
  adminSessionExpiry,
  apiTokenByHash,
  apiTokenById,
  countEndpoints,
  endpointById,
  endpointExists,
  likeEscape,
  listApiTokens,
  listEndpoints,
  overviewCounts,
  registrationSettings,
} from "./admin.ts";

// spec 8: the admin API's reads of sessions, tokens, endpoints, counts and registration.

Deno.test("sessions and tokens are found by hash only, and no row carries a hash", () => {
  const db = testDb();
  createSession(db, { tokenHash: "s1", expiresAt: T0 + 99 }, T0);
  assert.equal(adminSessionExpiry(db, "s1"), T0 + 99);
  assert.equal(adminSessionExpiry(db, "nope"), null);
  createToken(db, { id: "t1", name: "a", tokenHash: "h1" }, T0);
  const t = apiTokenByHash(db, "h1")!;
  assert.deepEqual(Object.keys(t).sort(), ["created_at", "enabled", "id", "last_used_at", "name"]);
  assert.equal(apiTokenByHash(db, "h2"), null);
  assert.equal(apiTokenById(db, "t1")?.name, "a");
});

Deno.test("the token list pages newest first, ties broken by id", () => {
  const db = testDb();
  createToken(db, { id: "t1", name: "a", tokenHash: "h1" }, T0);
  createToken(db, { id: "t2", name: "b", tokenHash: "h2" }, T0);
  createToken(db, { id: "t3", name: "c", tokenHash: "h3" }, T0 + 1);
  touchToken(db, { id: "t1", usedAt: T0 + 5 }, T0);
  const first = listApiTokens(db, null, 2).map((r) => r.id);
  assert.deepEqual(first, ["t3", "t2"]);
  const rest = listApiTokens(db, { createdAt: T0, id: "t2" }, 2);
  assert.deepEqual(rest.map((r) => [r.id, r.last_used_at]), [["t1", T0 + 5]]);
});

Deno.test("the endpoint list filters by q (id prefix, name or remark), source and enabled, ordered by id", () => {
  const db = testDb();
  addEndpoint(db, "door-1", { name: "Front" });
  addEndpoint(db, "door-2", { enabled: false });
  addEndpoint(db, "x_y", { name: "50%_off" });
  db.prepare("UPDATE endpoints SET source = 'self', remark = 'kitchen' WHERE id = 'x_y'").run();
  const ids = (f: Parameters<typeof listEndpoints>[1], after = "", limit = 10) =>
    listEndpoints(db, f, after, limit).map((r) => r.id);
  assert.deepEqual(ids({}), ["door-1", "door-2", "x_y"]);
  assert.deepEqual(ids({ q: "door" }), ["door-1", "door-2"]);
  assert.deepEqual(ids({ q: "FRONT" }), ["door-1"], "case-insensitive for ASCII");
  assert.deepEqual(ids({ q: "itch" }), ["x_y"], "remark contains");
  assert.deepEqual(ids({ q: "%" }), ["x_y"], "LIKE wildcards are literal");
  assert.deepEqual(ids({ q: "_" }), ["x_y"]);
  assert.deepEqual(ids({ source: "self" }), ["x_y"]);
  assert.deepEqual(ids({ enabled: false }), ["door-2"]);
  assert.deepEqual(ids({}, "door-1", 1), ["door-2"]);
  assert.equal(countEndpoints(db, { q: "door" }), 2);
  assert.equal(countEndpoints(db, {}), 3);
  assert.equal(likeEscape("a%b_c\\"), "a\\%b\\_c\\\\");
});

Deno.test("an endpoint row has booleans for talk password and session but never a hash", () => {
  const db = testDb();
  addEndpoint(db, "e1", { talkHash: "th", sessionHash: "sh" });
  const e = endpointById(db, "e1")!;
  assert.equal(e.talk_password_set, 1);
  assert.equal(e.session_active, 1);
  assert.ok(!Object.keys(e).some((k) => k.endsWith("_hash")));
  assert.equal(endpointById(db, "nope"), null);
  assert.equal(endpointExists(db, "e1"), true);
  assert.equal(endpointExists(db, "nope"), false);
});

Deno.test("the overview counts endpoints, enabled ones, groups, pending deliveries and scheduled messages", () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b", { enabled: false });
  assert.deepEqual(overviewCounts(db), {
    endpoints: 2,
    endpoints_enabled: 1,
    groups: 0,
    pending_deliveries: 0,
    scheduled_messages: 0,
  });
});

Deno.test("registration settings default to closed with no code, and report the latest change", () => {
  const db = testDb();
  assert.deepEqual(registrationSettings(db), { enabled: false, code: "", updated_at: null });
  setRegistration(db, { code: "abcdefgh" }, T0);
  setRegistration(db, { enabled: true }, T0 + 7);
  assert.deepEqual(registrationSettings(db), {
    enabled: true,
    code: "abcdefgh",
    updated_at: T0 + 7,
  });
});
