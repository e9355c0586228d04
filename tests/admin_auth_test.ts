// The admin API's authentication (spec 8, 5 锁定, 4.5): every route needs a session or token,
// cookie state changes need X-Nixmsg-Request, the cookie's attributes, the login lockout,
// logout and the password change.
import assert from "node:assert/strict";
import {
  ADMIN_PASSWORD,
  AdminClient,
  adminSession,
  auditLines,
  startAdminServer,
} from "./helpers/admin.ts";

/** Every authenticated route of docs/admin-api.md, with sample parameters. */
const ROUTES: [string, string][] = [
  ["GET", "/api/admin/me"],
  ["POST", "/api/admin/password"],
  ["GET", "/api/admin/overview"],
  ["GET", "/api/admin/settings"],
  ["GET", "/api/admin/nodes"],
  ["GET", "/api/admin/metrics/history"],
  ["GET", "/api/admin/tokens"],
  ["POST", "/api/admin/tokens"],
  ["PATCH", "/api/admin/tokens/t_1"],
  ["DELETE", "/api/admin/tokens/t_1"],
  ["GET", "/api/admin/endpoints"],
  ["POST", "/api/admin/endpoints"],
  ["POST", "/api/admin/endpoints/import"],
  ["POST", "/api/admin/endpoints/batch"],
  ["GET", "/api/admin/endpoints/e1"],
  ["PATCH", "/api/admin/endpoints/e1"],
  ["DELETE", "/api/admin/endpoints/e1"],
  ["POST", "/api/admin/endpoints/e1/kick"],
  ["POST", "/api/admin/endpoints/e1/reset-login-password"],
  ["POST", "/api/admin/endpoints/e1/unlock"],
  ["PUT", "/api/admin/endpoints/e1/talk-password"],
  ["GET", "/api/admin/registration"],
  ["PUT", "/api/admin/registration"],
  ["GET", "/api/admin/groups"],
  ["POST", "/api/admin/groups"],
  ["GET", "/api/admin/groups/g1"],
  ["PATCH", "/api/admin/groups/g1"],
  ["DELETE", "/api/admin/groups/g1"],
  ["POST", "/api/admin/groups/g1/members"],
  ["DELETE", "/api/admin/groups/g1/members/e1"],
  ["POST", "/api/admin/groups/g1/transfer"],
  ["GET", "/api/admin/messages"],
  ["GET", "/api/admin/messages/1"],
];

Deno.test("every admin route answers 401 unauthorized without a session or token, and nothing is audited", async () => {
  const t = await startAdminServer();
  try {
    const anon = new AdminClient(t.adminUrl);
    for (const [method, path] of ROUTES) {
      const r = await anon.call(method, path, { body: method === "GET" ? undefined : {} });
      assert.equal(r.status, 401, `${method} ${path}`);
      assert.equal(r.code, "unauthorized", `${method} ${path}`);
      assert.equal(r.headers.get("access-control-allow-origin"), null, "no CORS on admin routes");
    }
    const stale = new AdminClient(t.adminUrl);
    stale.cookie = "nixmsg_admin=not-a-session";
    assert.equal((await stale.get("/api/admin/me")).status, 401, "an unknown cookie is refused");
    assert.deepEqual(auditLines(t), []);
  } finally {
    await t.close();
  }
});

Deno.test("a cookie request that changes state without X-Nixmsg-Request: 1 gets 403 forbidden; reads do not need it", async () => {
  const { t, admin } = await adminSession();
  try {
    const noHeader = { requestHeader: false };
    const post = await admin.post("/api/admin/endpoints", { id: "csrf1" }, noHeader);
    assert.equal(post.status, 403);
    assert.equal(post.code, "forbidden");
    const wrong = await admin.post("/api/admin/endpoints", { id: "csrf1" }, {
      requestHeader: false,
      headers: { "X-Nixmsg-Request": "yes" },
    });
    assert.equal(wrong.status, 403, "the header must be exactly 1");
    for (const [method, path] of ROUTES.filter(([m]) => m !== "GET")) {
      const r = await admin.call(method, path, { body: {}, requestHeader: false });
      assert.equal(r.status, 403, `${method} ${path}`);
    }
    assert.equal((await admin.get("/api/admin/endpoints/csrf1")).status, 404, "nothing created");
    assert.equal((await admin.get("/api/admin/overview", noHeader)).status, 200);
    const login = await new AdminClient(t.adminUrl).post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    }, noHeader);
    assert.equal(login.status, 403, "login is a state change too");
    assert.ok(
      auditLines(t).some((l) => l.result === "forbidden" && l.action === "endpoint.create"),
    );
  } finally {
    await t.close();
  }
});

Deno.test("the session cookie is HttpOnly, SameSite=Lax, Path=/ and has no Secure over plain HTTP", async () => {
  const t = await startAdminServer();
  try {
    const r = await new AdminClient(t.adminUrl).login();
    const cookie = r.headers.get("set-cookie") ?? "";
    assert.match(cookie, /^nixmsg_admin=[A-Za-z0-9_-]{43};/);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Lax/);
    assert.match(cookie, /; Path=\//);
    assert.match(cookie, /; Max-Age=43200/);
    assert.doesNotMatch(cookie, /Secure/);
    assert.equal(r.data.username, "admin");
    assert.ok(typeof r.data.expires_at === "number");
  } finally {
    await t.close();
  }
});

Deno.test("the cookie is Secure when a trusted proxy says X-Forwarded-Proto: https, and not when an untrusted peer says it", async () => {
  const https = { headers: { "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9" } };
  const trusted = await startAdminServer({ trusted_proxies: ["127.0.0.1/32"] });
  try {
    const r = await new AdminClient(trusted.adminUrl).post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    }, https);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("set-cookie") ?? "", /; Secure/);
    const line = auditLines(trusted).find((l) => l.action === "admin.login");
    assert.equal(line?.ip, "203.0.113.9", "spec 4.5: the audit shows the forwarded client IP");
  } finally {
    await trusted.close();
  }
  const untrusted = await startAdminServer();
  try {
    const r = await new AdminClient(untrusted.adminUrl).post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    }, https);
    assert.equal(r.status, 200);
    assert.doesNotMatch(r.headers.get("set-cookie") ?? "", /Secure/);
  } finally {
    await untrusted.close();
  }
});

Deno.test("ten failed admin logins lock the source IP for the right password too, while another IP still logs in", async () => {
  const t = await startAdminServer({ trusted_proxies: ["127.0.0.1/32"] });
  try {
    const from = (ip: string) => ({ headers: { "X-Forwarded-For": ip } });
    const c = new AdminClient(t.adminUrl);
    const wrong = { username: "admin", password: "wrong-password-000" };
    for (let i = 0; i < 9; i++) {
      assert.equal((await c.post("/api/admin/login", wrong, from("198.51.100.1"))).status, 401);
    }
    const badUser = await c.post("/api/admin/login", {
      username: "root",
      password: ADMIN_PASSWORD,
    }, from("198.51.100.1"));
    assert.equal(badUser.status, 401, "a wrong username is a failure too");
    const locked = await c.post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    }, from("198.51.100.1"));
    assert.equal(locked.status, 429);
    assert.equal(locked.code, "rate_limited");
    assert.ok(Number(locked.headers.get("retry-after")) > 0);
    const other = await c.post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    }, from("198.51.100.2"));
    assert.equal(other.status, 200, "the lock is per IP");
    const results = auditLines(t).filter((l) => l.action === "admin.login").map((l) => l.result);
    assert.deepEqual(results.slice(-3), ["unauthorized", "rate_limited", "ok"]);
  } finally {
    await t.close();
  }
});

Deno.test("logout ends the session at once and clears the cookie", async () => {
  const { t, admin } = await adminSession();
  try {
    const saved = admin.cookie;
    assert.equal((await admin.get("/api/admin/me")).data.auth, "session");
    const out = await admin.post("/api/admin/logout");
    assert.equal(out.status, 200);
    assert.match(out.headers.get("set-cookie") ?? "", /^nixmsg_admin=; Path=\/; Max-Age=0/);
    admin.cookie = saved;
    assert.equal((await admin.get("/api/admin/me")).status, 401, "the old cookie is dead");
  } finally {
    await t.close();
  }
});

Deno.test("the admin password change needs the old password and 12 characters, and ends the other sessions", async () => {
  const { t, admin } = await adminSession();
  try {
    const other = new AdminClient(t.adminUrl);
    await other.login();
    const wrongOld = await admin.post("/api/admin/password", {
      old_password: "not-the-password",
      new_password: "new-admin-password-1",
    });
    assert.equal(wrongOld.status, 401);
    const short = await admin.post("/api/admin/password", {
      old_password: ADMIN_PASSWORD,
      new_password: "short-11chr",
    });
    assert.equal(short.status, 400);
    const changed = await admin.post("/api/admin/password", {
      old_password: ADMIN_PASSWORD,
      new_password: "new-admin-password-1",
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal((await admin.get("/api/admin/me")).status, 200, "this session stays");
    assert.equal((await other.get("/api/admin/me")).status, 401, "the other session ended");
    const fresh = new AdminClient(t.adminUrl);
    const old = await fresh.post("/api/admin/login", {
      username: "admin",
      password: ADMIN_PASSWORD,
    });
    assert.equal(old.status, 401);
    await fresh.login("new-admin-password-1");
    const line = auditLines(t).find((l) => l.action === "admin.password" && l.result === "ok");
    assert.ok(line);
    assert.ok(!JSON.stringify(t.logs).includes("new-admin-password-1"), "no password in logs");
  } finally {
    await t.close();
  }
});

Deno.test("audit lines hold exactly actor, action, object, result and ip, and never a secret", async () => {
  const { t, admin } = await adminSession();
  try {
    const token = (await admin.post("/api/admin/tokens", { name: "audit-bot" })).data
      .token as string;
    const bot = new AdminClient(t.adminUrl, token);
    const created = await bot.post("/api/admin/endpoints", { id: "aud1" });
    const generated = created.data.login_password as string;
    await bot.post("/api/admin/endpoints", { id: "aud2", login_password: "given-password-9" });
    const code = (await admin.put("/api/admin/registration", { generate: true })).data
      .code as string;
    await admin.get("/api/admin/overview");
    const lines = auditLines(t);
    assert.deepEqual(lines.map((l) => `${l.actor} ${l.action} ${l.object} ${l.result}`), [
      "admin admin.login  ok",
      "admin token.create t_" + (lines[1].object as string).slice(2) + " ok",
      "token:audit-bot endpoint.create aud1 ok",
      "token:audit-bot endpoint.create aud2 ok",
      "admin registration.update  ok",
    ], "reads are not audited");
    for (const l of lines) {
      assert.deepEqual(Object.keys(l).sort(), [
        "action",
        "actor",
        "ip",
        "level",
        "msg",
        "object",
        "result",
        "time",
      ]);
      assert.equal(l.ip, "127.0.0.1");
    }
    const all = JSON.stringify(t.logs);
    for (const secret of [ADMIN_PASSWORD, token, generated, "given-password-9", code]) {
      assert.ok(!all.includes(secret), "a secret reached the log");
    }
  } finally {
    await t.close();
  }
});
