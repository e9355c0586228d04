// API tokens (spec 8): shown once, stored hashed, bearer requests ignore cookies and the request
// header, no access to /password and /tokens, disable and delete act at once, wrong tokens count
// toward the admin IP lockout.
import assert from "node:assert/strict";
import { sha256Hex } from "../server/auth/tokens.ts";
import { AdminClient, adminSession, auditLines } from "./helpers/admin.ts";

async function newToken(admin: AdminClient, name: string): Promise<{ id: string; token: string }> {
  const r = await admin.post("/api/admin/tokens", { name });
  assert.equal(r.status, 200, r.text);
  const item = r.data.item as Record<string, unknown>;
  return { id: item.id as string, token: r.data.token as string };
}

Deno.test("a created token is shown once, stored only as SHA-256, and works without cookie or X-Nixmsg-Request", async () => {
  const { t, admin } = await adminSession();
  try {
    const { id, token } = await newToken(admin, "billing");
    assert.match(token, /^nxm_[A-Za-z0-9_-]{43}$/);
    const list = await admin.get("/api/admin/tokens");
    assert.ok(!list.text.includes(token), "the list never shows the token");
    const items = list.data.items as Record<string, unknown>[];
    assert.deepEqual(items.map((i) => [i.id, i.name, i.enabled, i.last_used_at]), [
      [id, "billing", true, null],
    ]);
    const row = await t.db.get("SELECT token_hash FROM api_tokens WHERE id = ?", id);
    assert.equal(row?.token_hash, sha256Hex(token));

    const bot = new AdminClient(t.adminUrl, token);
    const me = await bot.get("/api/admin/me");
    assert.deepEqual(me.data, { username: "admin", auth: "token", token: { id, name: "billing" } });
    const created = await bot.post("/api/admin/endpoints", { id: "from-bot" }, {
      requestHeader: false,
    });
    assert.equal(created.status, 200, created.text);
    const line = auditLines(t).find((l) => l.action === "endpoint.create");
    assert.deepEqual(line && [line.actor, line.object, line.result], [
      "token:billing",
      "from-bot",
      "ok",
    ]);
    const used = await admin.get("/api/admin/tokens");
    const usedAt = (used.data.items as Record<string, unknown>[])[0].last_used_at;
    assert.equal(typeof usedAt, "number", "last_used_at is set after use");
    assert.ok(!JSON.stringify(t.logs).includes(token), "the token is never logged");
  } finally {
    await t.close();
  }
});

Deno.test("a bearer token ignores the cookie: a wrong token fails even next to a valid session", async () => {
  const { t, admin } = await adminSession();
  try {
    const mixed = new AdminClient(t.adminUrl, "nxm_not-a-real-token");
    mixed.cookie = admin.cookie;
    const r = await mixed.get("/api/admin/me");
    assert.equal(r.status, 401);
  } finally {
    await t.close();
  }
});

Deno.test("a token cannot call /api/admin/password or /api/admin/tokens*", async () => {
  const { t, admin } = await adminSession();
  try {
    const { id, token } = await newToken(admin, "ops");
    const bot = new AdminClient(t.adminUrl, token);
    const calls: [string, string][] = [
      ["POST", "/api/admin/password"],
      ["GET", "/api/admin/tokens"],
      ["POST", "/api/admin/tokens"],
      ["PATCH", `/api/admin/tokens/${id}`],
      ["DELETE", `/api/admin/tokens/${id}`],
    ];
    for (const [method, path] of calls) {
      const r = await bot.call(method, path, { body: method === "GET" ? undefined : {} });
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(r.code, "forbidden");
    }
    const logout = await bot.post("/api/admin/logout");
    assert.equal(logout.status, 403, "a token has no session to end");
    const still = await admin.get("/api/admin/tokens");
    assert.equal((still.data.items as unknown[]).length, 1, "the token was not deleted");
  } finally {
    await t.close();
  }
});

Deno.test("disabling a token fails its very next request; enabling restores it; deleting kills it", async () => {
  const { t, admin } = await adminSession();
  try {
    const { id, token } = await newToken(admin, "ci");
    const bot = new AdminClient(t.adminUrl, token);
    assert.equal((await bot.get("/api/admin/overview")).status, 200);
    const off = await admin.patch(`/api/admin/tokens/${id}`, { enabled: false });
    assert.equal(off.status, 200);
    assert.equal((off.data.item as Record<string, unknown>).enabled, false);
    assert.equal((await bot.get("/api/admin/overview")).status, 401);
    await admin.patch(`/api/admin/tokens/${id}`, { enabled: true, name: "ci-2" });
    assert.equal(
      ((await bot.get("/api/admin/me")).data.token as Record<string, unknown>).name,
      "ci-2",
    );
    assert.equal((await admin.delete(`/api/admin/tokens/${id}`)).status, 200);
    assert.equal((await bot.get("/api/admin/overview")).status, 401);
    assert.equal((await admin.delete(`/api/admin/tokens/${id}`)).status, 404);
  } finally {
    await t.close();
  }
});

Deno.test("token names are unique and 1 to 64 characters", async () => {
  const { t, admin } = await adminSession();
  try {
    await newToken(admin, "same");
    const dup = await admin.post("/api/admin/tokens", { name: "same" });
    assert.equal(dup.status, 409);
    assert.equal(dup.code, "conflict");
    assert.equal((await admin.post("/api/admin/tokens", { name: "  " })).status, 400);
    assert.equal((await admin.post("/api/admin/tokens", { name: "x".repeat(65) })).status, 400);
    assert.equal((await admin.post("/api/admin/tokens", {})).status, 400);
  } finally {
    await t.close();
  }
});

Deno.test("ten wrong bearer tokens lock the IP: even a valid token is refused with 429 while a session still works", async () => {
  const { t, admin } = await adminSession();
  try {
    const { token } = await newToken(admin, "victim");
    const guess = new AdminClient(t.adminUrl, "nxm_guess");
    for (let i = 0; i < 10; i++) {
      assert.equal((await guess.get("/api/admin/overview")).status, 401);
    }
    const good = await new AdminClient(t.adminUrl, token).get("/api/admin/overview");
    assert.equal(good.status, 429);
    assert.equal(good.code, "rate_limited");
    const login = await new AdminClient(t.adminUrl).post("/api/admin/login", {
      username: "admin",
      password: "anything-at-all",
    });
    assert.equal(login.status, 429, "the same lock covers admin login (spec 8)");
    assert.equal((await admin.get("/api/admin/overview")).status, 200, "a session is not locked");
  } finally {
    await t.close();
  }
});

Deno.test("the token list pages newest first with an opaque cursor", async () => {
  const { t, admin } = await adminSession();
  try {
    for (const n of ["a", "b", "c", "d", "e"]) await newToken(admin, n);
    const seen: string[] = [];
    let cursor = "";
    for (let i = 0; i < 5; i++) {
      const r = await admin.get(`/api/admin/tokens?limit=2&cursor=${encodeURIComponent(cursor)}`);
      seen.push(...(r.data.items as Record<string, unknown>[]).map((x) => x.name as string));
      cursor = r.data.next_cursor as string;
      if (cursor === "") break;
    }
    assert.deepEqual(seen.sort(), ["a", "b", "c", "d", "e"]);
    assert.equal((await admin.get("/api/admin/tokens?limit=0")).status, 400);
    assert.equal((await admin.get("/api/admin/tokens?limit=201")).status, 400);
    assert.equal((await admin.get("/api/admin/tokens?cursor=zzz")).status, 400);
  } finally {
    await t.close();
  }
});
