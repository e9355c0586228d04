/**
 * Deadlines and a connection cap for HTTP (issue 10 item 10).
 *
 * The socket idle timer restarts on every byte, so a peer dripping one byte at a time would hold
 * a connection forever. Here each request's headers must arrive within `headersMs` of the
 * connection becoming idle (handed over, or the previous response finished), and its body within
 * `bodyMs` of the headers. Deno's node:http ignores `headersTimeout` and `requestTimeout`
 * (checked with Deno 2.9), so the deadlines are kept here. At most `maxConnections` connections
 * may speak HTTP on one listener at a time; a WebSocket upgrade leaves that count.
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../log/log.ts";
import { countClosedConnection } from "../metrics/metrics.ts";

/** Options of {@linkcode HttpGuard}. */
export interface HttpGuardOptions {
  readonly headersMs: number;
  readonly bodyMs: number;
  readonly maxConnections: number;
  readonly log: Logger;
}

interface ConnState {
  timer: ReturnType<typeof setTimeout> | undefined;
  remote: string;
}

/** Repeated refusals are logged at most this often. */
const REFUSAL_LOG_MS = 10_000;

/** Watches the connections of one node:http server. */
export class HttpGuard {
  readonly #o: HttpGuardOptions;
  readonly #conns = new Map<Duplex, ConnState>();
  #refused = 0;
  #lastRefusalLog = -Infinity;

  constructor(http: HttpServer, o: HttpGuardOptions) {
    this.#o = o;
    // Before the router: the headers are in, so the body deadline starts now.
    http.prependListener("request", (req, res) => this.#onRequest(req, res));
    http.prependListener("upgrade", (req) => this.#release(req.socket));
  }

  /** HTTP connections open now. */
  get open(): number {
    return this.#conns.size;
  }

  /**
   * Registers a connection about to be handed to HTTP. Returns false when the listener already
   * has `maxConnections` of them; the caller then closes it at once.
   */
  admit(socket: Duplex, remote: string): boolean {
    if (this.#conns.size >= this.#o.maxConnections) {
      countClosedConnection("http_cap");
      this.#refused++;
      const now = Date.now();
      if (now - this.#lastRefusalLog >= REFUSAL_LOG_MS) {
        this.#lastRefusalLog = now;
        this.#o.log.warn("HTTP connection refused: too many open", {
          max_http_connections: this.#o.maxConnections,
          refused: this.#refused,
          remote,
        });
        this.#refused = 0;
      }
      return false;
    }
    const state: ConnState = { timer: undefined, remote };
    this.#conns.set(socket, state);
    socket.once("close", () => this.#release(socket));
    this.#arm(socket, state, "headers", this.#o.headersMs);
    return true;
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const state = this.#conns.get(socket);
    if (state === undefined) return;
    clearTimeout(state.timer);
    state.timer = undefined;
    if (hasBody(req)) {
      this.#arm(socket, state, "body", this.#o.bodyMs, () => !req.complete);
    }
    res.once("finish", () => {
      // Keep-alive: the next request's headers (and the idle time before them) get a deadline.
      if (this.#conns.get(socket) === state && !socket.destroyed) {
        this.#arm(socket, state, "headers", this.#o.headersMs);
      }
    });
  }

  #arm(
    socket: Duplex,
    state: ConnState,
    phase: "headers" | "body",
    ms: number,
    stillLate: () => boolean = () => true,
  ): void {
    clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (!stillLate() || socket.destroyed) return;
      countClosedConnection("http_deadline");
      this.#o.log.debug("HTTP connection closed: deadline passed", {
        phase,
        seconds: ms / 1000,
        remote: state.remote,
      });
      socket.destroy();
    }, ms);
  }

  #release(socket: Duplex): void {
    const state = this.#conns.get(socket);
    if (state === undefined) return;
    clearTimeout(state.timer);
    this.#conns.delete(socket);
  }

  /** Stops every timer. */
  close(): void {
    for (const state of this.#conns.values()) clearTimeout(state.timer);
    this.#conns.clear();
  }
}

function hasBody(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = Number(req.headers["content-length"] ?? "0");
  return !Number.isFinite(length) || length > 0;
}
