import type { App } from "./app_context.ts";
import type { HttpContext, Route } from "../http/types.ts";
import { HttpError } from "../http/router.ts";
import { constantTimeEqualString } from "../auth/tokens.ts";
import { randomId, randomPassword } from "../auth/generate.ts";
import { type ErrorCode, errorInfo } from "../protocol/mod.ts";
import { OpError } from "../store/op_error.ts";
import { validateNewEndpoint } from "./endpoint_rules.ts";
import { RateLimiter } from "../auth/rate_limit.ts";

/** spec 6.9: the request body is at most 4 KiB. */
const MAX_BODY = 4096;
const GENERATED_PASSWORD_LENGTH = 20;

function cors(ctx: HttpContext): void {
  // spec 6.9: cross-origin allowed, no cookies read or set.
  ctx.res.setHeader("Access-Control-Allow-Origin", "*");
  ctx.res.setHeader("Access-Control-Allow-Methods", "POST, OPTIONS");
  ctx.res.setHeader("Access-Control-Allow-Headers", "Content-Type");
  ctx.res.setHeader("Access-Control-Max-Age", "600");
}

function fail(ctx: HttpContext, code: ErrorCode, message?: string): void {
  const info = errorInfo(code);
  const status = code === "busy" ? 503 : code === "rate_limited" ? 429 : info.status;
  ctx.error(status, code, message ?? info.message);
}

interface RegisterBody {
  registration_code: string;
  id: string;
  login_password: string;
  name: string;
  talk_password: string;
}

function parseBody(raw: unknown): RegisterBody | string {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return "请求体必须是 JSON 对象";
  }
  const o = raw as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const key of ["registration_code", "id", "login_password", "name", "talk_password"]) {
    const v = o[key] ?? "";
    if (typeof v !== "string") return `字段不合法：${key}`;
    out[key] = v;
  }
  return out as unknown as RegisterBody;
}

/**
 * `POST /api/client/register` (spec 6.9). Check order: switch -> IP lock -> constant-time code
 * compare (failures count) -> fields -> hash -> insert. Logs only the result, id and IP.
 */
const MINUTE = 60_000;

/** The key of an address group's registrations in the shared counters. */
function sharedKey(addressKey: string): string {
  return JSON.stringify(["registration", "success", addressKey]);
}

export function registrationRoutes(app: App): Route[] {
  // issue 28: successful registrations per address group, so one holder of the code cannot
  // create endpoints by the thousand. Bounded: a group's bucket only matters while it is busy.
  const perMinute = app.config.limits.registrations_per_ip_per_minute;
  const shared = app.sharedCounters;
  const successes = new RateLimiter({
    perSecond: perMinute / 60,
    burst: perMinute,
    clock: app.clock,
    maxKeys: 65536,
  });
  const register = async (ctx: HttpContext): Promise<void> => {
    cors(ctx);
    const ip = ctx.peer.remoteAddress;
    const key = app.addressKey(ip);
    let raw: Uint8Array;
    try {
      raw = await ctx.body(MAX_BODY);
    } catch (err) {
      if (err instanceof HttpError) return fail(ctx, "bad_request", "请求体超过 4 KiB");
      throw err;
    }
    let enabled: string | null;
    let code: string | null;
    try {
      enabled = await app.store.query("settings.get", { key: "registration_enabled" });
      code = await app.store.query("settings.get", { key: "registration_code" });
    } catch {
      return fail(ctx, "busy");
    }
    if (enabled !== "true") return fail(ctx, "registration_closed");
    const attempt = await app.registrationLocks.acquire(key);
    if (attempt === null) return fail(ctx, "rate_limited");
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
    } catch {
      json = null;
    }
    const given = typeof json === "object" && json !== null
      ? (json as Record<string, unknown>).registration_code
      : undefined;
    if (!code || typeof given !== "string" || !constantTimeEqualString(given, code)) {
      attempt.fail(code ? "wrong_code" : "no_code_set");
      await attempt.done();
      app.log.info("registration refused", { result: "registration_code_invalid", ip });
      return fail(ctx, "registration_code_invalid");
    }
    attempt.release();
    const body = parseBody(json);
    if (typeof body === "string") return fail(ctx, "bad_request", body);
    const problem = validateNewEndpoint({
      id: body.id,
      loginPassword: body.login_password,
      name: body.name,
      talkPassword: body.talk_password,
    });
    if (problem) return fail(ctx, "bad_request", problem);
    // issue 30 item 4: on a cluster the successes of every node count (fixed minute windows).
    const sharedUntil = shared ? (await shared.state([sharedKey(key)])).get(sharedKey(key)) : null;
    if (!successes.hasToken(key) || sharedUntil != null) {
      app.log.info("registration refused", { result: "rate_limited", ip });
      const retry = sharedUntil != null
        ? Math.max(1, Math.ceil((sharedUntil - app.clock()) / 1000))
        : successes.retryAfterSeconds(key);
      ctx.res.setHeader("Retry-After", String(retry));
      return fail(ctx, "rate_limited", "同一地址注册过于频繁，请稍后再试");
    }
    const id = body.id || randomId("e", 8);
    const generated = body.login_password === "" ? randomPassword(GENERATED_PASSWORD_LENGTH) : null;
    try {
      const loginHash = await app.pool.hash(generated ?? body.login_password);
      const talkHash = body.talk_password ? await app.pool.hash(body.talk_password) : null;
      await app.store.run("endpoint.create", {
        id,
        name: body.name,
        remark: "",
        source: "self",
        loginHash,
        talkHash,
        defaultDelayMs: 0,
      });
    } catch (err) {
      if (err instanceof OpError && err.code === "id_taken") {
        app.log.info("registration refused", { result: "id_taken", endpoint: id, ip });
        return fail(ctx, "id_taken");
      }
      app.log.error("registration failed", { endpoint: id, ip, error: (err as Error).message });
      return fail(ctx, "busy");
    }
    successes.take(key);
    await shared?.fail([{ key: sharedKey(key), max: perMinute, windowMs: MINUTE, lockMs: MINUTE }]);
    app.log.info("registration", { result: "ok", endpoint: id, ip });
    ctx.json(200, { ok: true, data: generated ? { id, login_password: generated } : { id } });
  };
  const preflight = (ctx: HttpContext): void => {
    cors(ctx);
    ctx.res.statusCode = 204;
    ctx.res.end();
  };
  return [
    { method: "POST", path: "/api/client/register", scope: "client", handler: register },
    { method: "OPTIONS", path: "/api/client/register", scope: "client", handler: preflight },
  ];
}
