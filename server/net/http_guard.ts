/**
 * Deadlines and a connection cap for HTTP (issue 10 item 10).
 *
 * The socket idle timer restarts on every byte, so a peer dripping one byte at a time would hold
 * a connection forever. Here each request's headers must arrive within `headersMs` of the
 * connection becoming idle (handed over, or its last pending response finished: keep-alive), and
 * its body within `bodyMs` of the headers. Deno's node:http ignores `headersTimeout` and
 * `requestTimeout` (checked with Deno 2.9), so the deadlines are kept here. At most
 * `maxConnections` connections may speak HTTP on one listener at a time, and at most
 * `maxPerAddress` of them from one address group (issue 28: one address holding partial requests
 * must not shut every other client out); a WebSocket upgrade leaves both counts.
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../log/log.ts";
import { LogThrottle } from "../log/throttle.ts";
import { countClosedConnection } from "../metrics/metrics.ts";
import { AddressShare } from "./address_share.ts";

/** Options of {@linkcode HttpGuard}. */
export interface HttpGuardOptions {
  readonly headersMs: number;
  readonly bodyMs: number;
  readonly maxConnections: number;
  /** Most HTTP connections of one address group (issue 28). */
  readonly maxPerAddress: number;
  /** The group an address counts in (IPv6 by prefix). */
  readonly group: (ip: string) => string;
  /** True for a TCP peer that carries many clients (a trusted proxy): no per-address share. */
  readonly exempt: (ip: string) => boolean;
  readonly log: Logger;
}

interface ConnState {
  timer: ReturnType<typeof setTimeout> | undefined;
  remote: string;
  /** Requests whose response has not finished yet: more than one when the peer pipelines. */
  active: number;
  /** Gives back the per-address share. */
  releaseShare: () => void;
}

/**
 * What a timer waits for. "idle" is a keep-alive connection waiting for its next request: when
 * not a byte of it arrived, closing it is routine, not a slow peer.
 */
type Phase = "headers" | "body" | "idle";

/** Watches the connections of one node:http server. */
export class HttpGuard {
  readonly #o: HttpGuardOptions;
  readonly #conns = new Map<Socket, ConnState>();
  readonly #share: AddressShare;
  readonly #throttle: LogThrottle;

  constructor(http: HttpServer, o: HttpGuardOptions) {
    this.#o = o;
    this.#share = new AddressShare(o.maxPerAddress);
    this.#throttle = new LogThrottle(o.log);
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
   * has `maxConnections` of them, or its address group its share; the caller then closes it.
   */
  admit(socket: Socket, remote: string): boolean {
    // The share first: an address at its share must not count toward the listener's refusals.
    const releaseShare = this.#o.exempt(remote)
      ? () => {}
      : this.#share.take(this.#o.group(remote));
    if (releaseShare === null) {
      countClosedConnection("http_ip_cap");
      this.#throttle.line(
        "warn",
        "HTTP connection refused: too many from one address",
        "http_ip_cap",
        { max_http_connections_per_ip: this.#o.maxPerAddress, remote },
        { max_http_connections_per_ip: this.#o.maxPerAddress },
      );
      return false;
    }
    if (this.#conns.size >= this.#o.maxConnections) {
      releaseShare();
      countClosedConnection("http_cap");
      this.#throttle.line(
        "warn",
        "HTTP connection refused: too many open",
        "http_cap",
        { max_http_connections: this.#o.maxConnections, remote },
        { max_http_connections: this.#o.maxConnections },
      );
      return false;
    }
    const state: ConnState = { timer: undefined, remote, active: 0, releaseShare };
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
    state.releaseShare();
    this.#conns.delete(socket);
  }

  /** Stops every timer. */
  close(): void {
    for (const state of this.#conns.values()) clearTimeout(state.timer);
    this.#conns.clear();
    this.#throttle.close();
  }
}

function hasBody(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = Number(req.headers["content-length"] ?? "0");
  return !Number.isFinite(length) || length > 0;
}
