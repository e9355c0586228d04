import type { App } from "./app_context.ts";
import type { AuthResult, ConnectInfo } from "../broker/types.ts";
import {
  constantTimeEqualHex,
  isSessionToken,
  newSessionToken,
  sha256Hex,
} from "../auth/tokens.ts";
import type { LoginRow } from "../store/queries/endpoints.ts";
import { PoolBusyError } from "../auth/password_pool.ts";
import { isValidId } from "../protocol/mod.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** What a successful login leaves for the connection (spec 5 登录与会话令牌). */
export interface LoginGrant {
  /** A freshly issued session token (password logins only), handed out in `hello`. */
  issuedToken: string | null;
}

/**
 * Decides MQTT logins (spec 5): a session token (`nst_…`, SHA-256 lookup, constant-time compare,
 * idle expiry, never locked) or a login password (lockouts first, then argon2 in the pool; a
 * success issues a new token committed before CONNACK). A database error answers `error`, never
 * bad credentials, so the client retries.
 */
export class LoginService {
  #app: App;
  /** Token use seen in memory; written to `session_used_at` at most hourly (spec 5). */
  #usedAt = new Map<string, number>();
  /** Grants waiting for the broker's `connected` event, by connection code. */
  #pending = new Map<string, LoginGrant>();

  constructor(app: App) {
    this.#app = app;
  }

  /** The grant of a connection that just authenticated; removes it. */
  take(connCode: string): LoginGrant | null {
    const g = this.#pending.get(connCode) ?? null;
    this.#pending.delete(connCode);
    return g;
  }

  /** Forgets a grant whose connection never completed (e.g. refused after authenticate). */
  drop(connCode: string): void {
    this.#pending.delete(connCode);
  }

  /** Grants not yet taken or dropped. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  async authenticate(info: ConnectInfo): Promise<AuthResult> {
    const { clientId, username, password } = info;
    // spec 5: ClientID = Username = endpoint id.
    if (clientId !== username || clientId === "") return { ok: false, reason: "bad_credentials" };
    // issue 28: an id no endpoint can have (spec 6.1: 1-64 characters of a fixed set) is refused
    // before it keys a lockout map or reaches a log line; it cannot exist, so timing tells nothing.
    if (!isValidId(clientId)) {
      this.#app.security.failure(
        isSessionToken(password) ? "session_token" : "login",
        "invalid_id",
        {
          ip: info.remoteAddress,
        },
      );
      return { ok: false, reason: "bad_credentials" };
    }
    return isSessionToken(password) ? await this.#byToken(info) : await this.#byPassword(info);
  }

  async #row(id: string): Promise<LoginRow | null | "error"> {
    try {
      return await this.#app.store.query("endpoint.login_row", { id });
    } catch (err) {
      this.#app.log.error("login lookup failed", { endpoint: id, error: (err as Error).message });
      return "error";
    }
  }

  /** Refuses a session token login, logged and counted but not locked (spec 5, issue 18). */
  #tokenRefused(info: ConnectInfo, reason: string): AuthResult {
    this.#app.security.failure("session_token", reason, {
      endpoint: info.clientId,
      ip: info.remoteAddress,
    });
    return { ok: false, reason: "bad_credentials" };
  }

  async #byToken(info: ConnectInfo): Promise<AuthResult> {
    const app = this.#app;
    const row = await this.#row(info.clientId);
    if (row === "error") return { ok: false, reason: "error" };
    if (!row) return this.#tokenRefused(info, "unknown_id");
    if (!row.enabled) return this.#tokenRefused(info, "disabled");
    if (!row.session_hash) return this.#tokenRefused(info, "no_session");
    const hash = sha256Hex(info.password);
    if (!constantTimeEqualHex(hash, row.session_hash)) {
      return this.#tokenRefused(info, "wrong_token"); // spec 5: wrong tokens are not counted
    }
    const now = app.clock();
    const memUsed = this.#usedAt.get(row.id);
    const lastUsed = Math.max(row.session_used_at ?? 0, memUsed ?? 0);
    const idleDays = app.config.session_idle_days;
    if (idleDays > 0 && now - lastUsed > idleDays * DAY_MS) {
      return this.#tokenRefused(info, "expired_token");
    }
    this.#usedAt.set(row.id, now);
    if (now - (row.session_used_at ?? 0) >= HOUR_MS) {
      // Best effort: a failed touch only shortens the idle window, it must not refuse a login.
      app.store.run("endpoint.touch_session", { id: row.id, sessionHash: hash, usedAt: now })
        .catch((err) => app.log.warn("session touch failed", { error: (err as Error).message }));
    }
    this.#pending.set(info.connCode, { issuedToken: null });
    return { ok: true };
  }

  async #byPassword(info: ConnectInfo): Promise<AuthResult> {
    const app = this.#app;
    const id = info.clientId;
    // spec 5 锁定: while locked, reject without hashing. The slot is taken before argon2, so
    // concurrent guesses cannot outnumber the failures still allowed (issue 18).
    const owner = app.addressKey(info.remoteAddress);
    const attempt = await app.loginLocks.acquire(id, owner);
    if (attempt === null) return { ok: false, reason: "bad_credentials" };
    const row = await this.#row(id);
    if (row === "error") {
      attempt.release();
      return { ok: false, reason: "error" };
    }
    // issue 18: an unknown or disabled id costs one argon2 check too, so timing tells nothing.
    // issue 28: the check waits for the pool only within the queue's bound and the address's
    // share of it; past them the login is refused at once as busy (CONNACK 0x89).
    let ok: boolean;
    try {
      ok = row !== null && row.enabled === 1
        ? await app.pool.verify(row.login_hash, info.password, owner)
        : await app.pool.verifyDummy(info.password, owner);
    } catch (err) {
      attempt.release();
      if (!(err instanceof PoolBusyError)) throw err;
      app.security.failure("login", "hash_queue_full", { ip: info.remoteAddress });
      return { ok: false, reason: "busy" };
    }
    if (!ok || row === null) {
      attempt.fail(row === null ? "unknown_id" : row.enabled !== 1 ? "disabled" : "wrong_password");
      await attempt.done(); // issue 30: counted for every node before the refusal goes out
      return { ok: false, reason: "bad_credentials" };
    }
    attempt.release();
    const token = newSessionToken();
    // spec 12: re-hash with the current parameters after a successful check.
    const loginHash = app.pool.needsRehash(row.login_hash)
      ? await app.pool.hash(info.password)
      : undefined;
    try {
      // spec 5: the new token is committed before CONNACK; the old one dies with this commit.
      await app.store.run("endpoint.set_session", {
        id,
        sessionHash: sha256Hex(token),
        ...(loginHash ? { loginHash } : {}),
      });
    } catch (err) {
      app.log.error("session issue failed", { endpoint: id, error: (err as Error).message });
      return { ok: false, reason: "error" };
    }
    this.#usedAt.delete(id);
    this.#pending.set(info.connCode, { issuedToken: token });
    return { ok: true };
  }
}
