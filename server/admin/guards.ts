/**
 * The guards written on the admin route lines (STYLE: `admin(handleEndpointsList)`), and the
 * audit line of every state-changing admin request (spec 8).
 *
 * - `open`: no authentication (login, logout).
 * - `admin`: a session cookie or an API token.
 * - `session`: a session cookie only; an API token gets 403 (spec 8: password and tokens).
 *
 * A cookie-authenticated request other than GET/HEAD must carry `X-Nixmsg-Request: 1`, or it
 * gets 403 (spec 8: this stops cross-site form posts). Routes given an action are audited.
 */
import type { App } from "../app/app_context.ts";
import type { HttpContext, RouteHandler } from "../http/types.ts";
import { HttpError } from "../http/router.ts";
import { type Actor, actorName, type AdminAuth } from "./auth.ts";
import { httpFail } from "./request.ts";
import { recordAudit } from "../app/audit.ts";

/** One admin request as a handler sees it. */
export interface AdminRequest {
  readonly ctx: HttpContext;
  /** The caller; null on open routes. */
  readonly actor: Actor | null;
  /** The audit action; a handler may refine it (PATCH enabled=false is `endpoint.disable`). */
  action: string;
  /** The audit object: the `:id` path parameter unless the handler sets another. */
  object: string;
  /** The audit result when the status does not tell it (a streamed import); else derived. */
  result?: string;
}

/** An admin route handler. */
export type AdminHandler = (req: AdminRequest) => void | Promise<void>;

/** The guard constructors of the admin route table. */
export interface Guards {
  open(handler: AdminHandler, action?: string): RouteHandler;
  admin(handler: AdminHandler, action?: string): RouteHandler;
  session(handler: AdminHandler, action?: string): RouteHandler;
}

/** The header a cookie-authenticated state change must carry (spec 8). */
export const REQUEST_HEADER = "x-nixmsg-request";

function changesState(ctx: HttpContext): boolean {
  const m = ctx.req.method ?? "GET";
  return m !== "GET" && m !== "HEAD";
}

function requireRequestHeader(ctx: HttpContext): void {
  if (changesState(ctx) && ctx.req.headers[REQUEST_HEADER] !== "1") {
    throw httpFail("forbidden", "缺少请求头 X-Nixmsg-Request: 1");
  }
}

/**
 * Builds the guards over `auth`. Audit lines carry no password, token, code or body (spec 12):
 * only actor, action, object id, result code and client IP.
 */
export function createGuards(app: App, auth: AdminAuth): Guards {
  // The line goes to the log at once; the row (操作日志) follows through the writer, after the
  // response, and is never awaited by it.
  const audit = (req: AdminRequest, result: string) => {
    const actor = req.actor === null ? "admin" : actorName(req.actor);
    const ip = req.ctx.peer.remoteAddress;
    app.log.info("audit", { actor, action: req.action, object: req.object, result, ip });
    void recordAudit(app, { actor, action: req.action, target: req.object, result, ip });
  };

  const run = async (
    req: AdminRequest,
    audited: boolean,
    checks: () => void,
    handler: AdminHandler,
  ): Promise<void> => {
    try {
      checks();
      await handler(req);
    } catch (err) {
      if (audited) audit(req, err instanceof HttpError ? err.code : "busy");
      throw err;
    }
    if (audited) audit(req, req.result ?? (req.ctx.res.statusCode < 400 ? "ok" : "error"));
  };

  const request = (ctx: HttpContext, actor: Actor | null, action?: string): AdminRequest => ({
    ctx,
    actor,
    action: action ?? "",
    object: ctx.params.id ?? "",
  });

  return {
    open: (handler, action) => (ctx) =>
      run(
        request(ctx, null, action),
        action !== undefined,
        () => requireRequestHeader(ctx),
        handler,
      ),

    admin: (handler, action) => async (ctx) => {
      const actor = await auth.authenticate(ctx);
      const checks = () => {
        if (actor.kind === "session") requireRequestHeader(ctx);
      };
      return run(request(ctx, actor, action), action !== undefined, checks, handler);
    },

    session: (handler, action) => async (ctx) => {
      const actor = await auth.authenticate(ctx);
      const checks = () => {
        if (actor.kind === "token") throw httpFail("forbidden", "API 令牌不能调用这个接口");
        requireRequestHeader(ctx);
      };
      return run(request(ctx, actor, action), action !== undefined, checks, handler);
    },
  };
}
