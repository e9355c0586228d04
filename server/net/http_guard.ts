/**
 * Deadlines and a connection cap for HTTP (issue 10 item 10).
 *
 * The socket idle timer restarts on every byte, so a peer dripping one byte at a time would hold
 * a connection forever. Here each request's headers must arrive within `headersMs` of the
 * connection becoming idle (handed over, or its last pending response finished: keep-alive), and
 * its body within `bodyMs` of the headers. Deno's node:http ignores `headersTimeout` and
 * `requestTimeout` (checked with Deno 2.9), so the deadlines are kept here. At most
 * `maxConnections` connections may speak HTTP on one listener at a time; a WebSocket upgrade
 * leaves that count.
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import type { Socket } from "node:net";
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
  /** Requests whose response has not finished yet: more than one when the peer pipelines. */
  active: number;
}

/**
 * What a timer waits for. "idle" is a keep-alive connection waiting for its next request: when
 * not a byte of it arrived, closing it is routine, not a slow peer.
 */
type Phase = "headers" | "body" | "idle";

/** Repeated refusals are logged at most this often. */
const REFUSAL_LOG_MS = 10_000;

/** Watches the connections of one node:http server. */
export class HttpGuard {
  readonly #o: HttpGuardOptions;
  readonly #conns = new Map<Socket, ConnState>();
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
  admit(socket: Socket, remote: string): boolean {
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
    const state: ConnState = { timer: undefined, remote, active: 0 };
    this.#conns.set(socket, state);
    socket.once("close", () => this.#release(socket));
    this.#arm(socket, state, "headers", this.#o.headersMs);
    return true;
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const state = this.#conns.get(socket);
    if (state === undefined) return;
    state.active++;
    clearTimeout(state.timer);
    state.timer = undefined;
    if (hasBody(req)) {
      this.#arm(socket, state, "body", this.#o.bodyMs, () => !req.complete);
    }
    // "close" comes once per response: after "finish", or when it is cut off.
    res.once("close", () => {
      state.active--;
      // Keep-alive: once nothing is pending, the idle time and the next request's headers
      // together get a deadline. A pipelined request still in progress keeps its own timer.
      if (state.active === 0 && this.#conns.get(socket) === state && !socket.destroyed) {
        this.#arm(socket, state, "idle", this.#o.headersMs);
      }
    });
  }

  #arm(
    socket: Socket,
    state: ConnState,
    phase: Phase,
    ms: number,
    stillLate: () => boolean = () => true,
  ): void {
    clearTimeout(state.timer);
    const readBefore = socket.bytesRead;
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (!stillLate() || socket.destroyed) return;
      if (phase === "idle" && socket.bytesRead === readBefore) {
        this.#o.log.debug("HTTP keep-alive connection closed: idle", {
          seconds: ms / 1000,
          remote: state.remote,
        });
        return void socket.destroy();
      }
      countClosedConnection("http_deadline");
      this.#o.log.debug("HTTP connection closed: deadline passed", {
        phase: phase === "idle" ? "headers" : phase,
        seconds: ms / 1000,
        remote: state.remote,
      });
      socket.destroy();
    }, ms);
  }

  #release(socket: Socket): void {
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
