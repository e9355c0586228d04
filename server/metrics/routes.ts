/**
 * `GET /metrics` (spec 4.3). It is in the `admin` scope, so with `admin_listen` set it is served
 * only there, without authentication. On a shared port it needs
 * `Authorization: Bearer <metrics.token>`: no token configured -> 404, a wrong one -> 401.
 */
import type { App } from "../app/app_context.ts";
import type { HttpContext, Route } from "../http/types.ts";
import { constantTimeEqualString } from "../auth/tokens.ts";
import { createServerMetrics } from "./metrics.ts";

/** Whether `ctx` may read the metrics; answers 404/401 itself when not. */
function allowed(ctx: HttpContext, token: string): boolean {
  // admin_listen set: this listener serves no client scope, and the spec asks for no auth.
  if (!ctx.scopes.has("client")) return true;
  if (token === "") {
    ctx.error(404, "not_found", "Not found");
    return false;
  }
  const m = /^Bearer +(\S+) *$/i.exec(ctx.req.headers.authorization ?? "");
  if (m === null || !constantTimeEqualString(m[1], token)) {
    ctx.res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
    ctx.error(401, "unauthorized", "A valid metrics token is required");
    return false;
  }
  return true;
}

/**
 * The metrics route of one server.
 *
 * @example
 * const routes = [...healthRoutes(opts), ...metricsRoutes(app)];
 */
export function metricsRoutes(app: App): Route[] {
  const metrics = createServerMetrics(app);
  return [{
    method: "GET",
    path: "/metrics",
    scope: "admin",
    handler: async (ctx) => {
      if (!allowed(ctx, app.config.metrics.token)) return;
      const text = new TextEncoder().encode(await metrics.render());
      ctx.res.statusCode = 200;
      ctx.res.setHeader("Content-Type", metrics.contentType);
      ctx.res.setHeader("Content-Length", text.byteLength);
      ctx.res.setHeader("Cache-Control", "no-store");
      ctx.res.end(text);
    },
  }];
}
