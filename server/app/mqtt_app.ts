import type { App } from "./app_context.ts";
import type { AuthResult, BrokerHooks, ConnectInfo, PublishOutcome } from "../broker/types.ts";
import { type Conn } from "./connections.ts";
import { SerialQueue } from "./serial_queue.ts";
import type { LoginService } from "./login.ts";
import {
  encodeFrame,
  encodeResp,
  errResp,
  isErrorCode,
  okResp,
  parseRequest,
  ProtocolError,
  type RequestFrame,
  type RequestOf,
  type RequestType,
} from "../protocol/mod.ts";
import type { FatalReason } from "../protocol/frames.ts";
import { OpError } from "../store/op_error.ts";
import type { OpArgs, OpResult } from "../store/op.ts";
import type { Ops } from "../store/ops/mod.ts";
import { countError } from "../metrics/metrics.ts";

/** spec 5: each endpoint's request queue holds 256 frames, then back-pressures the reader. */
const REQUEST_QUEUE = 256;
/** spec 7.5: topic and packet header overhead under the CONNECT Maximum Packet Size. */
const PACKET_OVERHEAD = 128;
/**
 * Request types whose handling overlaps later requests of the same connection once their writer
 * op is queued (see `#handle`). None of them reads, on the main thread, anything an earlier
 * uncommitted op of the same connection may still change:
 * - `ack`, `receipt_ack`, `recall` only queue one op; the op reads its state on the write
 *   connection, after every earlier op of this connection (the writer is FIFO).
 * - `send` reads the sender's default delay (only `self.update` changes it, and that is serial),
 *   whether its id is known (a repeat still in flight is answered by the op's idempotency check
 *   first; the one read that matters, for an out-of-range schedule, waits for earlier requests)
 *   and the talk grant state. Without a talk password the main thread only passes the verdict;
 *   the op decides on the write connection and never asks for a retry, so no send is queued
 *   twice and overtaken. A send with a talk password may run argon2 and retry when the target's
 *   talk version moved: it stays serial.
 * Everything else (reads such as `status`, `self.get`, group and self-service changes, `hello`,
 * logout) waits for every earlier request of the connection to complete, and the next request
 * waits for it.
 */
const PIPELINED: ReadonlySet<string> = new Set(["send", "ack", "receipt_ack", "recall"]);
/** How long `fatal` / logout wait for the client's PUBACK before disconnecting anyway. */
const FAREWELL_WAIT_MS = 2000;

/**
 * What a request handler gets besides its frame. Its methods need their `this`: call them on the
 * context (`ctx.write(…)`), or pass the context itself where a `Pipeline` is asked for. One per
 * request, without a closure of its own (issue 19).
 */
export class RequestCtx {
  readonly app: App;
  readonly conn: Conn;
  readonly mqtt: MqttApp;
  /** What `after` collected. */
  afters: (() => void | Promise<void>)[] | null = null;
  /** Lets the connection's next request start; null for a serial request. */
  readonly #release: (() => void) | null;

  constructor(app: App, conn: Conn, mqtt: MqttApp, release: (() => void) | null) {
    this.app = app;
    this.conn = conn;
    this.mqtt = mqtt;
    this.#release = release;
  }

  /** Runs `fn` after the response has been published (e.g. logout closes the connection). */
  after(fn: () => void | Promise<void>): void {
    (this.afters ??= []).push(fn);
  }

  /**
   * Queues a writer op like `app.store.run` and lets the connection's next request start
   * (pipelined handlers queue their op through it, once and before any other await of theirs
   * that may let a later op of the same connection go first).
   */
  write<K extends keyof Ops & string>(op: K, args: OpArgs<Ops[K]>): Promise<OpResult<Ops[K]>> {
    const p = this.app.store.run(op, args);
    this.#release?.();
    return p;
  }

  /** Settles once every earlier request of this connection has completed. */
  earlier(): Promise<void> {
    return this.conn.queue ? this.conn.queue.othersDone() : Promise.resolve();
  }
}

/** One handler per frame type (STYLE: one dispatch table per protocol). Returns `resp.data`. */
export type Handler<T extends RequestType> = (
  ctx: RequestCtx,
  frame: RequestOf<T>,
) => Promise<unknown>;

/** The frame handlers, by type. Types without a handler answer `bad_request`. */
export type HandlerTable = { [T in RequestType]?: Handler<T> };

/** Listeners the messaging and presence layers attach to connection life-cycle events. */
export interface ConnListeners {
  /** After a successful `hello` response (spec 6.1: now online, pushing starts). */
  handshaken?(conn: Conn): void;
  /** After a connection is gone and its disconnect op committed (spec 7.5). */
  gone?(conn: Conn, wasCurrent: boolean): void;
}

/**
 * The MQTT side of the app (spec 5, 6): broker hooks, the connection table, per-endpoint serial
 * request handling with the rate limit and the handshake gate, and downlink helpers.
 */
export class MqttApp implements BrokerHooks {
  readonly #app: App;
  readonly #login: LoginService;
  readonly #handlers: HandlerTable;
  readonly #listeners: ConnListeners[] = [];
  /** Request handlers running now, pipelined ones included. */
  #running = 0;
  /** Called when `#running` drops to zero (see `settle`). */
  #idle: (() => void)[] = [];
  #stopping = false;

  constructor(app: App, login: LoginService, handlers: HandlerTable) {
    this.#app = app;
    this.#login = login;
    this.#handlers = handlers;
  }

  /**
   * Shutdown has begun (spec 7.8): logins are refused like an internal error (no CONNACK, the
   * client retries), new request frames are held without PUBACK (the client sends them again
   * after reconnecting), frames queued but not started are dropped (not committed, so the
   * client retries them), and connections closing from now on skip their disconnect writes,
   * which the next start's recovery covers. Requests already running finish; see `settle`.
   */
  stop(): void {
    this.#stopping = true;
    for (const conn of this.#app.conns.all()) conn.queue?.close();
  }

  /**
   * Resolves once every running request has finished and published its `resp` (spec 7.8: the
   * response of every committed request goes out before the connections close), or after
   * `timeoutMs`.
   */
  async settle(timeoutMs: number): Promise<void> {
    if (this.#running === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Stopped queues start no new requests, so this only waits for those running now.
    await new Promise<void>((resolve) => {
      this.#idle.push(resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
  }

  /** Adds life-cycle listeners (push loops, presence). */
  listen(l: ConnListeners): void {
    this.#listeners.push(l);
  }

  authenticate(info: ConnectInfo): Promise<AuthResult> {
    if (this.#stopping) return Promise.resolve({ ok: false, reason: "error" });
    return this.#login.authenticate(info);
  }

  connected(info: ConnectInfo): void {
    const app = this.#app;
    const grant = this.#login.take(info.connCode);
    const conn: Conn = {
      code: info.connCode,
      endpointId: info.clientId,
      transport: info.transport,
      remoteAddress: info.remoteAddress,
      protocolVersion: info.protocolVersion,
      maxPacketSize: info.maxPacketSize,
      issuedToken: grant?.issuedToken ?? null,
      subscribed: false,
      handshaken: false,
      maxReceiveBytes: null,
      helloTimer: null,
      queue: null,
      closed: false,
    };
    conn.queue = new SerialQueue(
      REQUEST_QUEUE,
      (payload, release) => this.#handle(conn, payload, release),
    );
    // spec 6.1: no hello within 30 s -> disconnect.
    conn.helloTimer = setTimeout(() => {
      conn.helloTimer = null;
      if (!conn.handshaken) app.broker.disconnect(conn.code);
    }, app.config.timeouts.hello_seconds * 1000);
    app.conns.add(conn);
    // spec 7.4: dispatch treats an endpoint with any connection (handshaking too) as connected.
    app.messaging.bookkeeping.commit(
      "context.connected",
      () => conn.closed ? null : { endpointId: conn.endpointId, connCode: conn.code },
      { fields: { endpoint: conn.endpointId, conn: conn.code } },
    );
  }

  subscribed(connCode: string, _topic: string): void {
    const conn = this.#app.conns.get(connCode);
    if (conn) conn.subscribed = true;
  }

  message(connCode: string, payload: Uint8Array): Promise<void> | void {
    const conn = this.#app.conns.get(connCode);
    if (!conn || conn.closed || !conn.queue) return;
    // Never settles: no PUBACK, and the connection closes soon.
    if (this.#stopping) return new Promise(() => {});
    return conn.queue.push(payload);
  }

  abandoned(connCode: string): void {
    // A login that passed but never became a connection leaves no token grant behind.
    this.#login.drop(connCode);
  }

  /** Logins that passed and wait for their connection to become ready (grants in memory). */
  get pendingLogins(): number {
    return this.#login.pendingCount;
  }

  disconnected(connCode: string, _clientId: string): void {
    const app = this.#app;
    this.#login.drop(connCode);
    const removed = app.conns.remove(connCode);
    if (!removed) return;
    const { conn, wasCurrent } = removed;
    conn.closed = true;
    conn.queue?.close();
    if (conn.helloTimer) clearTimeout(conn.helloTimer);
    if (this.#stopping) return;
    // spec 7.5: always clear this code's push marks; only the current connection goes offline
    // (judged again on a retry: a newer connection may have arrived meanwhile). Retried until
    // it commits, or the marks would stay until a restart.
    app.messaging.bookkeeping.commit("endpoint.disconnect", () => ({
      endpointId: conn.endpointId,
      connCode: conn.code,
      isCurrent: wasCurrent && app.conns.current(conn.endpointId) === undefined,
      // issue 30: offline only if no later handshake (on any node) superseded this one.
      ...(conn.onlineSince !== undefined ? { onlineSince: conn.onlineSince } : {}),
    }), {
      fields: { endpoint: conn.endpointId, conn: conn.code },
      onCommitted: () => {
        for (const l of this.#listeners) l.gone?.(conn, wasCurrent);
      },
    });
  }

  /** The largest downlink frame this connection takes (spec 7.5 step 2). */
  frameLimit(conn: Conn): number | null {
    const limits: number[] = [];
    if (conn.maxReceiveBytes !== null) limits.push(conn.maxReceiveBytes);
    if (conn.maxPacketSize !== null) limits.push(conn.maxPacketSize - PACKET_OVERHEAD);
    return limits.length ? Math.min(...limits) : null;
  }

  /** Publishes a downlink frame to one connection. */
  publish(conn: Conn, bytes: Uint8Array, qos: 0 | 1): Promise<PublishOutcome> {
    if (conn.closed) return Promise.resolve("dropped");
    return this.#app.broker.publish(conn.code, bytes, qos);
  }

  /** Publishes a downlink frame to one connection, without waiting for its outcome. */
  post(conn: Conn, bytes: Uint8Array, qos: 0 | 1): void {
    if (!conn.closed) this.#app.broker.post(conn.code, bytes, qos);
  }

  /**
   * A cluster node's link to the other nodes (issue 30): `fatal` and `kick` reach their
   * connections of the endpoint too. Null on a single node.
   */
  remote: { close(endpointId: string, reason?: FatalReason): Promise<void> | void } | null = null;

  /**
   * Sends `fatal` and disconnects the endpoint's current connection (spec 6.8); used by admin
   * disable, delete and password reset. On a cluster node, on the other nodes too.
   */
  async fatal(endpointId: string, reason: FatalReason): Promise<void> {
    await this.remote?.close(endpointId, reason);
    await this.fatalLocal(endpointId, reason);
  }

  /**
   * {@link fatal} on this node only (another node's admin asked for it, or the store poll found
   * it). Once per connection: a close already under way is not repeated.
   */
  async fatalLocal(endpointId: string, reason: FatalReason): Promise<void> {
    const conn = this.#app.conns.current(endpointId);
    if (!conn || conn.closing) return;
    conn.closing = true;
    await this.#farewell(conn, encodeFrame({ v: 1, type: "fatal", reason }));
  }

  /**
   * Disconnects an endpoint's current connection without a frame (admin kick, spec 8); true when
   * this node held one. On a cluster node the kick is recorded in the store and the other nodes
   * close theirs too.
   */
  async kick(endpointId: string): Promise<boolean> {
    await this.remote?.close(endpointId);
    return this.kickLocal(endpointId);
  }

  /** {@link kick} on this node only; once per connection, like {@link fatalLocal}. */
  kickLocal(endpointId: string): boolean {
    const conn = this.#app.conns.current(endpointId);
    if (!conn) return false;
    if (conn.closing) return true;
    conn.closing = true;
    this.#app.broker.disconnect(conn.code);
    return true;
  }

  /** Publishes a last frame, waits briefly for its PUBACK, then disconnects. */
  async #farewell(conn: Conn, bytes: Uint8Array): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.publish(conn, bytes, 1),
      new Promise((r) => (timer = setTimeout(r, FAREWELL_WAIT_MS))),
    ]);
    clearTimeout(timer);
    this.#app.broker.disconnect(conn.code);
  }

  /**
   * Publishes a `resp`; an oversized one becomes `response_too_large` (spec 6.10). The PUBACK is
   * not awaited, so that one client's round trips do not serialize request handling; see
   * `#respBytes` for a caller that waits.
   */
  #respond(conn: Conn, rid: string, result: { data: unknown } | { error: ProtocolError }): void {
    this.post(conn, this.#respBytes(conn, rid, result), 1);
  }

  #respBytes(
    conn: Conn,
    rid: string,
    result: { data: unknown } | { error: ProtocolError },
  ): Uint8Array {
    if ("error" in result) countError(result.error.code);
    const frame = "error" in result ? errResp(rid, result.error) : okResp(rid, result.data);
    return encodeResp(frame, this.frameLimit(conn));
  }

  /**
   * Takes one request frame of `conn`; returns its completion, or nothing when it is answered
   * at once. A pipelined request calls `release` once its writer op is queued, so the next
   * request starts then: ops are queued in arrival order and the writer is FIFO. Its `resp` goes
   * out when its own op has committed; the queue bounds how many are in flight. A serial request
   * starts once every earlier one has completed, and the next one waits for it.
   */
  #handle(conn: Conn, payload: Uint8Array, release: () => void): Promise<void> | void {
    const app = this.#app;
    const parsed = parseRequest(payload, app.config.limits);
    if (!parsed.ok) {
      // spec 6: malformed frames get bad_request; without a readable rid it is echoed as "".
      this.#respond(conn, parsed.rid ?? "", { error: parsed.error });
      return;
    }
    const frame = parsed.frame;
    if (frame.type === "hello" && !conn.subscribed) {
      // spec 6.1: a hello before the down subscription cannot be answered -> disconnect.
      app.broker.disconnect(conn.code);
      return;
    }
    // spec 6.10: one bucket for everything except ack and receipt_ack.
    if (frame.type !== "ack" && frame.type !== "receipt_ack" && !app.rate.take(conn.endpointId)) {
      this.#respond(conn, frame.rid, { error: new ProtocolError("rate_limited") });
      return;
    }
    if (!conn.handshaken && frame.type !== "hello") {
      this.#respond(conn, frame.rid, { error: new ProtocolError("not_ready") });
      return;
    }
    const handler = this.#handlers[frame.type] as Handler<typeof frame.type> | undefined;
    if (!handler) {
      this.#respond(conn, frame.rid, {
        error: new ProtocolError("bad_request", `不支持的请求类型：${frame.type}`),
      });
      return;
    }
    return this.#run(conn, frame, handler, pipelines(frame) ? release : null);
  }

  /** Runs one request: `release` is null for a serial one (see `#handle`). */
  async #run(
    conn: Conn,
    frame: RequestFrame,
    handler: Handler<RequestType>,
    release: (() => void) | null,
  ): Promise<void> {
    const app = this.#app;
    this.#running++;
    try {
      const ctx = new RequestCtx(app, conn, this, release);
      if (release === null) await ctx.earlier();
      let result: { data: unknown } | { error: ProtocolError };
      try {
        result = { data: await handler(ctx, frame as never) };
      } catch (err) {
        result = { error: this.#asProtocolError(err, frame.type) };
      }
      if (conn.closed) return;
      const afters = ctx.afters;
      if ("error" in result || afters === null) {
        this.#respond(conn, frame.rid, result);
        if ("error" in result) return;
      } else {
        // e.g. logout: the connection closes only once its `resp` has been taken.
        await this.publish(conn, this.#respBytes(conn, frame.rid, result), 1);
        for (const fn of afters) await fn();
      }
      if (frame.type === "hello") {
        for (const l of this.#listeners) l.handshaken?.(conn);
      }
    } finally {
      if (--this.#running === 0) { for (const w of this.#idle.splice(0)) w(); }
    }
  }

  #asProtocolError(err: unknown, type: string): ProtocolError {
    if (err instanceof ProtocolError) return err;
    if (err instanceof OpError && isErrorCode(err.code)) {
      return new ProtocolError(err.code, undefined, err.data);
    }
    this.#app.log.error("request failed", { type, error: (err as Error)?.message ?? String(err) });
    return new ProtocolError("busy");
  }
}

/** True when `frame` may overlap later requests of its connection (see {@link PIPELINED}). */
function pipelines(frame: RequestFrame): boolean {
  if (!PIPELINED.has(frame.type)) return false;
  if (frame.type !== "send") return true;
  return frame.to.kind === "group" || !frame.talk_password;
}
