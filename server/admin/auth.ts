/**
 * Who is calling the admin API (spec 8): a web session (cookie `nixmsg_admin`, stored as SHA-256
 * in `admin_sessions`) or an API token (`Authorization: Bearer nxm_…`, stored as SHA-256 in
 * `api_tokens`). Both are looked up on every request, so a logout, a disabled token or a deleted
 * token takes effect at once. Wrong tokens count toward the admin IP lockout (spec 5, 8).
 */
import type { App } from "../app/app_context.ts";
import type { HttpContext } from "../http/types.ts";
import type { Attempt, IpLockouts } from "../auth/lockout.ts";
import { sha256Hex } from "../auth/tokens.ts";
import type { TokenRow } from "../store/queries/admin.ts";
import { readCookie, SESSION_COOKIE } from "./cookies.ts";
import { httpFail } from "./request.ts";

/** spec 8: `last_used_at` is written at most once a minute per token. */
const TOUCH_EVERY_MS = 60_000;

/** The authenticated caller of one admin request. */
export type Actor =
  | { readonly kind: "session"; readonly sessionHash: string; readonly expiresAt: number }
  | { readonly kind: "token"; readonly id: string; readonly name: string };

/** The audit name of an actor (spec 8): `admin` or `token:<name>`. */
export function actorName(actor: Actor): string {
  return actor.kind === "session" ? "admin" : `token:${actor.name}`;
}

/** Authentication state of the admin API: the IP lockout and token use seen in memory. */
export class AdminAuth {
  readonly #app: App;
  /** Failed admin logins and wrong API tokens per source IP (spec 5 锁定, spec 8). */
  readonly locks: IpLockouts;
  /** Token id -> when it was last used and when that was last written. */
  readonly #used = new Map<string, { usedAt: number; writtenAt: number }>();

  constructor(app: App) {
    this.#app = app;
    this.locks = app.adminLocks;
  }

  /**
   * Takes a slot for one admin secret check from the caller's IP (spec 5 锁定), and for
   * `account` under the per-account rule when a password names it (issue 28), or throws 429
   * `rate_limited` with `Retry-After` when the IP is locked or already has as many checks in
   * flight as failures would still be allowed (issue 18). No secret is checked then.
   */
  begin(ctx: HttpContext, account?: string): Attempt {
    // issue 28: an IPv6 client counts with its whole /64 (limits.ipv6_prefix_bits).
    const ip = this.#app.addressKey(ctx.peer.remoteAddress);
    const attempt = this.locks.begin(ip, account);
    if (attempt !== null) return attempt;
    const until = this.locks.lockedUntil(ip, account) ?? this.#app.clock();
    const seconds = Math.max(1, Math.ceil((until - this.#app.clock()) / 1000));
    ctx.res.setHeader("Retry-After", String(seconds));
    const accountLocked = account !== undefined && this.locks.accountLockedUntil(account) !== null;
    throw httpFail(
      "rate_limited",
      accountLocked ? "管理员账号密码错误次数过多，已临时锁定" : "登录失败次数过多，已临时锁定",
    );
  }

  /**
   * {@linkcode begin} after reading the cluster's shared counters (issue 30), for the admin
   * password: a lock reached through other nodes holds here too. API tokens keep `begin` (their
   * failures still count for every node) so a request costs no extra store read.
   */
  async acquire(ctx: HttpContext, account?: string): Promise<Attempt> {
    await this.locks.refresh(this.#app.addressKey(ctx.peer.remoteAddress), account);
    return this.begin(ctx, account);
  }

  /**
   * The caller of `ctx`, or a thrown 401 `unauthorized` (429 while the IP is locked and a token
   * is offered). A request with an `Authorization` header is judged by it alone (spec 8).
   */
  async authenticate(ctx: HttpContext): Promise<Actor> {
    const authz = ctx.req.headers.authorization;
    if (authz !== undefined) return this.#byToken(ctx, authz);
    const cookie = readCookie(ctx.req.headers.cookie, SESSION_COOKIE);
    if (cookie !== undefined && cookie !== "") {
      const sessionHash = sha256Hex(cookie);
      const expiresAt = await this.#app.store.query("admin.session_expiry", {
        tokenHash: sessionHash,
      });
      if (expiresAt !== null && expiresAt > this.#app.clock()) {
        return { kind: "session", sessionHash, expiresAt };
      }
    }
    throw httpFail("unauthorized", "需要登录或 API 令牌");
  }

  /**
   * Whether `actor` may still act: its session has not ended or expired, its token is still
   * enabled. Counts nothing against the lockouts; for long requests (the live inbox).
   */
  async stillValid(actor: Actor): Promise<boolean> {
    const { store } = this.#app;
    if (actor.kind === "session") {
      const expiresAt = await store.query("admin.session_expiry", { tokenHash: actor.sessionHash });
      return expiresAt !== null && expiresAt > this.#app.clock();
    }
    return (await store.query("admin.token_by_id", { id: actor.id }))?.enabled === 1;
  }

  /** When the token was last used, merging the stored value with uses not yet written. */
  lastUsed(row: TokenRow): number | null {
    const mem = this.#used.get(row.id)?.usedAt ?? null;
    if (mem === null) return row.last_used_at;
    return Math.max(mem, row.last_used_at ?? 0);
  }

  /** Forgets a deleted token's in-memory use. */
  forget(tokenId: string): void {
    this.#used.delete(tokenId);
  }

  async #byToken(ctx: HttpContext, authz: string): Promise<Actor> {
    const attempt = this.begin(ctx);
    let row: TokenRow | null;
    try {
      const m = /^Bearer +(\S+) *$/i.exec(authz);
      row = m === null
        ? null
        : await this.#app.store.query("admin.token_by_hash", { tokenHash: sha256Hex(m[1]) });
    } catch (err) {
      attempt.release();
      throw err;
    }
    if (row === null || row.enabled !== 1) {
      attempt.fail(row === null ? "wrong_api_token" : "disabled_api_token");
      throw httpFail("unauthorized", "API 令牌无效");
    }
    attempt.release();
    this.#touch(row);
    return { kind: "token", id: row.id, name: row.name };
  }

  #touch(row: TokenRow): void {
    const app = this.#app;
    const now = app.clock();
    const seen = this.#used.get(row.id);
    const writtenAt = Math.max(seen?.writtenAt ?? 0, row.last_used_at ?? 0);
    if (now - writtenAt < TOUCH_EVERY_MS) {
      this.#used.set(row.id, { usedAt: now, writtenAt });
      return;
    }
    this.#used.set(row.id, { usedAt: now, writtenAt: now });
    // Best effort: a lost touch only makes last_used_at a minute older.
    app.store.run("admin.token_touch", { id: row.id, usedAt: now })
      .catch((err) => app.log.warn("token touch failed", { error: (err as Error).message }));
  }
}
