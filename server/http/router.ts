/**
 * The HTTP router: one flat route table, split by scope across the listeners (spec 4.3).
 *
 * A request is matched against the routes of the scopes its listener serves, in table order.
 * - A path that matches no served route gets 404; a path served for other methods only, 405.
 *   Routes of scopes this listener does not serve do not exist here (spec 4.3: "一律 404").
 * - A request matching nothing may go to a scope's fallback (the web console's static files).
 *   Paths under `/api/` and `/mqtt` never do: an API client must get a JSON 404, not a page.
 * - A handler that throws an {@linkcode HttpError} gets its status and code. An op error with a
 *   catalogue code gets that code's status. Every other store failure (a write that did not
 *   commit, an unreadable database) is 503 `busy` and one log line (spec 6.10, 7.8). Anything
 *   else is logged with its stack and answered 500 `busy` (STYLE: one error renderer).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../log/log.ts";
import { errorInfo, isErrorCode } from "../protocol/errors.ts";
import { OpError } from "../store/op_error.ts";
import { createContext, HttpError, sendError } from "./context.ts";
import { compilePath, type PathPattern } from "./path_match.ts";
import type { HttpApp, RequestInfo, Route, RouteHandler, Scope } from "./types.ts";

export type { HttpApp, HttpContext, RequestInfo, Route, RouteHandler, Scope } from "./types.ts";
export { HttpError } from "./context.ts";

/** Options of {@linkcode createRouter}. */
export interface RouterOptions {
  readonly log: Logger;
  /**
   * Handlers for requests no route matches, by scope. The first served scope, in the order
   * admin, client, health, that has one is used.
   */
  readonly fallbacks?: Partial<Record<Scope, RouteHandler>>;
}

interface CompiledRoute {
  readonly route: Route;
  readonly pattern: PathPattern;
}

const FALLBACK_ORDER: readonly Scope[] = ["admin", "client", "health"];

function parseUrl(raw: string | undefined): URL | null {
  // Prefixing keeps `//host/x` a path instead of a protocol-relative URL.
  if (raw === undefined || !raw.startsWith("/")) return null;
  try {
    return new URL(`http://localhost${raw}`);
  } catch {
    return null;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/**
 * True for a failure of the store rather than of the request: an op that did not commit (the
 * writer answers `busy`), or an error of the read connection (node:sqlite throws
 * `ERR_SQLITE_ERROR` for I/O errors and corrupt pages, `ERR_INVALID_STATE` once it is closed).
 */
export function isStoreFailure(err: unknown): boolean {
  if (err instanceof OpError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ERR_SQLITE_ERROR" || code === "ERR_INVALID_STATE";
}

/** One line about a store failure: its message and SQLite's code, never a stack. */
function storeFailure(err: unknown): string {
  const e = err as { message?: unknown; errstr?: unknown; cause?: unknown };
  const parts = [String(e.message ?? err)];
  for (const extra of [e.errstr, e.cause]) {
    if (typeof extra === "string" && !parts.includes(extra)) parts.push(extra);
  }
  return parts.join(": ").replace(/\s+/g, " ");
}

/**
 * Builds the HTTP app from the route table.
 *
 * @example
 * const app = createRouter([
 *   ...healthRoutes({ ready: () => store.ready }),
 *   { method: "POST", path: "/api/client/register", scope: "client", handler: register },
 *   { method: "GET", path: "/api/admin/endpoints/:id", scope: "admin", handler: admin(getEndpoint) },
 * ], { log, fallbacks: { admin: serveConsole } });
 */
export function createRouter(routes: readonly Route[], opts: RouterOptions): HttpApp {
  const table: CompiledRoute[] = routes.map((route) => ({
    route,
    pattern: compilePath(route.path),
  }));
  const { log } = opts;

  async function run(handler: RouteHandler, ctx: Parameters<RouteHandler>[0]): Promise<void> {
    try {
      await handler(ctx);
    } catch (err) {
      const { res } = ctx;
      if (err instanceof HttpError) {
        if (!res.headersSent) sendError(res, err.status, err.code, err.message);
        else res.destroy();
        return;
      }
      if (err instanceof OpError && isErrorCode(err.code) && err.code !== "busy") {
        // An op's expected refusal that the handler did not map itself.
        const info = errorInfo(err.code);
        if (!res.headersSent) sendError(res, info.status, err.code, info.message);
        else res.destroy();
        return;
      }
      if (isStoreFailure(err)) {
        // spec 7.8: the store cannot be used now; the client may retry (spec 6.10 busy).
        log.error("HTTP request failed: store unavailable", {
          method: ctx.req.method,
          path: ctx.url.pathname,
          error: storeFailure(err),
        });
        if (!res.headersSent) sendError(res, 503, "busy", errorInfo("busy").message);
        else res.destroy();
        return;
      }
      log.error("HTTP handler failed", {
        method: ctx.req.method,
        path: ctx.url.pathname,
        error: describe(err),
      });
      if (!res.headersSent) sendError(res, 500, "busy", "Internal error, try again later");
      else res.destroy();
    }
  }

  return {
    async handle(req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
      const url = parseUrl(req.url);
      if (url === null) return sendError(res, 400, "bad_request", "Malformed request target");
      const method = req.method ?? "GET";
      const allowed = new Set<string>();
      for (const { route, pattern } of table) {
        if (!info.scopes.has(route.scope)) continue;
        const params = pattern.match(url.pathname);
        if (params === null) continue;
        if (route.method === method || (method === "HEAD" && route.method === "GET")) {
          const ctx = createContext({ req, res, url, params, ...info });
          return await run(route.handler, ctx);
        }
        allowed.add(route.method);
      }
      if (allowed.size > 0) {
        if (allowed.has("GET")) allowed.add("HEAD");
        res.setHeader("Allow", [...allowed].join(", "));
        return sendError(res, 405, "bad_request", `Method ${method} not allowed here`);
      }
      const api = url.pathname.startsWith("/api/") || url.pathname === "/mqtt";
      const scope = api
        ? undefined
        : FALLBACK_ORDER.find((s) => info.scopes.has(s) && opts.fallbacks?.[s] !== undefined);
      const fallback = scope === undefined ? undefined : opts.fallbacks?.[scope];
      if (fallback !== undefined) {
        const ctx = createContext({ req, res, url, params: {}, ...info });
        return await run(fallback, ctx);
      }
      sendError(res, 404, "not_found", "Not found");
    },
  };
}
