/**
 * Admin web sessions (spec 8): login, logout, me, and the admin password change.
 */
import { randomBytes } from "node:crypto";
import { sha256Hex } from "../auth/tokens.ts";
import { ADMIN_PASSWORD_MAX, ADMIN_PASSWORD_MIN } from "../auth/admin_password.ts";
import { PoolBusyError } from "../auth/password_pool.ts";
import {
  clearedCookie,
  readCookie,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  sessionCookie,
} from "./cookies.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { httpFail, ok, readJson, reqString } from "./request.ts";

/** spec 8: the username is always `admin`. */
const ADMIN_USERNAME = "admin";
/** Longest password we hand to argon2 at all; longer ones are simply wrong. */
const PASSWORD_INPUT_MAX = 1024;
const COOKIE_BYTES = 32;

/** The session handlers. */
export function sessionHandlers(d: AdminDeps) {
  const { app, auth } = d;
  const writer = app.store;

  /**
   * Checks `password` against the admin hash under the IP lockout (spec 5 锁定): the slot is
   * taken before argon2, so concurrent guesses cannot outnumber the failures still allowed
   * (issue 18). A wrong password or `otherwiseOk` false throws 401 with `message`.
   */
  async function checkAdminPassword(
    req: AdminRequest,
    password: string,
    otherwiseOk: boolean,
    message: string,
    reason: "wrong_password" | "wrong_old_password",
  ): Promise<void> {
    // issue 28: the password counts per address and per account (`admin`, the only one).
    const attempt = await auth.acquire(req.ctx, ADMIN_USERNAME);
    let good: boolean;
    const owner = app.addressKey(req.ctx.peer.remoteAddress);
    try {
      const phc = await app.store.query("settings.get", { key: "admin_password_hash" });
      // Always one argon2 check, so a wrong username answers no faster than a wrong password.
      good = phc !== null
        ? await app.pool.verify(phc, password, owner) && otherwiseOk
        : await app.pool.verifyDummy(password, owner);
    } catch (err) {
      attempt.release(); // a database error or a full check queue checked nothing
      if (err instanceof PoolBusyError) throw httpFail("busy", "服务器忙，请稍后重试");
      throw err;
    }
    if (!good) {
      attempt.fail(otherwiseOk ? reason : "wrong_username");
      await attempt.done();
      throw httpFail("unauthorized", message);
    }
    attempt.release();
  }

  /** POST /api/admin/login: IP lock first, then argon2 (spec 5 锁定: no hashing while locked). */
  async function login(req: AdminRequest): Promise<void> {
    const { ctx } = req;
    const body = await readJson(ctx, ["username", "password"]);
    const username = reqString(body, "username", { max: 64 });
    const password = reqString(body, "password", { max: PASSWORD_INPUT_MAX });
    await checkAdminPassword(
      req,
      password,
      username === ADMIN_USERNAME,
      "用户名或密码错误",
      "wrong_password",
    );
    const token = randomBytes(COOKIE_BYTES).toString("base64url");
    const expiresAt = app.clock() + SESSION_TTL_MS;
    await writer.run("admin.session_create", { tokenHash: sha256Hex(token), expiresAt });
    ctx.res.setHeader("Set-Cookie", sessionCookie(token, ctx.peer.secure));
    ok(ctx, { username: ADMIN_USERNAME, expires_at: expiresAt });
  }

  /** POST /api/admin/logout: ends the cookie's session, if any, and clears the cookie. */
  async function logout(req: AdminRequest): Promise<void> {
    const { ctx } = req;
    if (ctx.req.headers.authorization !== undefined) {
      throw httpFail("forbidden", "API 令牌没有会话可以退出");
    }
    await readJson(ctx, []);
    const cookie = readCookie(ctx.req.headers.cookie, SESSION_COOKIE);
    if (cookie !== undefined && cookie !== "") {
      await writer.run("admin.session_delete", { tokenHash: sha256Hex(cookie) });
    }
    ctx.res.setHeader("Set-Cookie", clearedCookie(ctx.peer.secure));
    ok(ctx, {});
  }

  /** GET /api/admin/me. */
  function me(req: AdminRequest): void {
    const actor = req.actor!;
    if (actor.kind === "session") {
      ok(req.ctx, { username: ADMIN_USERNAME, auth: "session", expires_at: actor.expiresAt });
    } else {
      ok(req.ctx, {
        username: ADMIN_USERNAME,
        auth: "token",
        token: { id: actor.id, name: actor.name },
      });
    }
  }

  /**
   * POST /api/admin/password (spec 8): the old password is checked like a login (a wrong one
   * counts toward the IP lockout); the new one has 12–128 characters. Other sessions end.
   */
  async function changePassword(req: AdminRequest): Promise<void> {
    const { ctx } = req;
    const actor = req.actor!;
    if (actor.kind !== "session") throw httpFail("forbidden");
    const body = await readJson(ctx, ["old_password", "new_password"]);
    const oldPassword = reqString(body, "old_password", { max: PASSWORD_INPUT_MAX });
    const newPassword = reqString(body, "new_password", {
      min: ADMIN_PASSWORD_MIN,
      max: ADMIN_PASSWORD_MAX,
    });
    await checkAdminPassword(req, oldPassword, true, "旧密码错误", "wrong_old_password");
    const passwordHash = await app.pool.hash(newPassword);
    await writer.run("admin.password_set", { passwordHash, keepSessionHash: actor.sessionHash });
    ok(ctx, {});
  }

  return { login, logout, me, changePassword };
}
