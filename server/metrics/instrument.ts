/**
 * Counts every routed HTTP request and every error answer for `/metrics` without touching the
 * router: each route's handler is wrapped, and the wrapper sees what the handler answers or
 * throws (the router renders a thrown error after the wrapper returns).
 */
import type { HttpContext, Route } from "../http/types.ts";
import { HttpError } from "../http/router.ts";
import { countError, countHttp } from "./metrics.ts";

function errorCodeOf(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as { ok?: unknown; error?: { code?: unknown } };
  return v.ok === false && typeof v.error?.code === "string" ? v.error.code : null;
}

/** A context whose `json` and `error` also count the error codes they send. */
function counting(ctx: HttpContext): HttpContext {
  return {
    ...ctx,
    json: (status, value) => {
      const code = status >= 400 ? errorCodeOf(value) : null;
      if (code !== null) countError(code);
      ctx.json(status, value);
    },
    error: (status, code, message) => {
      countError(code);
      ctx.error(status, code, message);
    },
  };
}

/**
 * Wraps the handlers of `routes` with request and error counting.
 *
 * @example
 * createRouter(instrumentRoutes([...healthRoutes(opts), ...adminRoutes(app, mqtt)]), { log });
 */
export function instrumentRoutes(routes: readonly Route[]): Route[] {
  return routes.map((route) => ({
    ...route,
    handler: async (ctx: HttpContext) => {
      let status: number | null = null;
      try {
        await route.handler(counting(ctx));
      } catch (err) {
        const code = err instanceof HttpError ? err.code : "busy";
        status = err instanceof HttpError ? err.status : 500;
        countError(code);
        throw err;
      } finally {
        countHttp(route.scope, status ?? ctx.res.statusCode);
      }
    },
  }));
}
