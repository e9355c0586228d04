/** Types shared by the HTTP router, its routes and the listener that feeds it (spec 4.3). */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PeerInfo } from "../net/types.ts";

/**
 * Which part of the product a route belongs to (spec 4.3). With `admin_listen` empty, `listen`
 * serves every scope. With it set, `listen` serves `client` and `health`, and `admin_listen`
 * serves `admin` and `health`.
 */
export type Scope = "client" | "admin" | "health";

/** Everything a route handler gets for one request. */
export interface HttpContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The request path and query, parsed against `http://localhost` (the host is not meaningful). */
  readonly url: URL;
  /** Values of the route's `:name` segments, and `*` for the rest of a `/*` route; decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** The client address and scheme after the trusted-proxy rule (spec 4.5). */
  readonly peer: PeerInfo;
  /**
   * The scopes this listener serves. A handler that behaves differently on a shared port (the
   * `/metrics` token, spec 4.3) checks `scopes.has("client") && scopes.has("admin")`.
   */
  readonly scopes: ReadonlySet<Scope>;
  /**
   * Reads the whole request body. Rejects with a 413 {@linkcode HttpError} when it is longer
   * than `limitBytes`, and with a 400 one when the client stops half way.
   */
  body(limitBytes: number): Promise<Uint8Array>;
  /** Sends `value` as JSON with `status`. */
  json(status: number, value: unknown): void;
  /** Sends `{"ok":false,"error":{"code","message"}}` with `status`. */
  error(status: number, code: string, message: string): void;
}

/** Handles one request. A rejection becomes a JSON error response (see the router). */
export type RouteHandler = (ctx: HttpContext) => void | Promise<void>;

/** One line of the route table. Guards wrap the handler on the same line. */
export interface Route {
  /** An upper-case HTTP method. A GET route also answers HEAD. */
  readonly method: string;
  /** An exact path, with `:name` segments, or ending in `/*` to match a whole subtree. */
  readonly path: string;
  readonly scope: Scope;
  readonly handler: RouteHandler;
}

/** What the listener knows about a request beyond the request itself. */
export interface RequestInfo {
  readonly scopes: ReadonlySet<Scope>;
  readonly peer: PeerInfo;
}

/** The HTTP side of the server as the listener sees it. */
export interface HttpApp {
  /** Answers one request. Never rejects: failures become error responses. */
  handle(req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void>;
}
