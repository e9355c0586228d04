/** The core of the client (spec 9): connection, send queue, receiving and request matching. */
import { DEFAULT_LIMITS, encodeFrame } from "./body.ts";
import { NixMsgError } from "./errors.ts";
import { Link, type StopCause } from "./link.ts";
import { Listeners } from "./listeners.ts";
import { Receiver } from "./receiver.ts";
import { PendingRequests } from "./requests.ts";
import { buildSendFrame } from "./send_frame.ts";
import { frameFor, SendQueue } from "./send_queue.ts";
import type * as T from "./types.ts";
import { connectionUrl } from "./url.ts";
import * as wire from "./wire.ts";

/** The `client` name sent in `hello` (spec 6.1). */
export const CLIENT_NAME = "ts-sdk/0.1.0";
/** How long `close()` waits for in-flight acks and requests by default. */
export const CLOSE_TIMEOUT_MS = 5000;
/**
 * The machinery behind {@link NixMsgClient}: the connection loop, the send queue, the receiver
 * and the request matching. Applications use `NixMsgClient`.
 */
export class ClientCore {
  /** The endpoint id this client logs in as. */
  readonly endpointId: string;
  readonly #link: Link;
  readonly #queue: SendQueue;
  readonly #receiver: Receiver;
  readonly #pending: PendingRequests;
  readonly #sessions = new Listeners<string>();
  readonly #connections = new Listeners<T.ConnectionEvent>();
  readonly #ready = new Set<{ ok: (i: T.ServerInfo) => void; fail: (e: NixMsgError) => void }>();
  readonly #onCallbackError: (error: unknown) => void;
  #state: T.ConnectionState = "connecting";
  #stopError: NixMsgError | null = null;
  #info: T.ServerInfo | null = null;
  #offsetMs = 0;
  #issuedToken: string | null = null;
  #rid = 0;
  #pumpTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set when `close()` began: new calls fail with it while in-flight ones drain. */
  #closingError: NixMsgError | null = null;
  #closing: Promise<void> | null = null;
  #drained: (() => void) | null = null;

  protected constructor(
    url: string,
    endpointId: string,
    credential: T.Credential,
    o: T.ConnectOptions,
  ) {
    const keepalive = o.keepaliveSeconds ?? 30;
    if (!(keepalive >= 10 && keepalive <= 600)) {
      throw new NixMsgError("bad_request", "keepaliveSeconds must be 10–600");
    }
    const maxReceiveBytes = o.maxReceiveBytes ?? DEFAULT_LIMITS.maxFrameBytes;
    if (!(maxReceiveBytes >= 1024)) {
      throw new NixMsgError(
        "bad_request",
        "maxReceiveBytes must be at least 1024",
      );
    }
    if (typeof endpointId !== "string" || endpointId === "") {
      throw new NixMsgError("bad_request", "The endpoint id is empty");
    }
    const secret = credential && "password" in credential
      ? credential.password
      : credential?.sessionToken;
    if (typeof secret !== "string" || secret === "") {
      throw new NixMsgError("bad_request", "The credential is empty");
    }
    this.endpointId = endpointId;
    this.#pending = new PendingRequests(
      o.requestTimeoutMs ?? 30_000,
      () => this.#checkDrained(),
    );
    this.#onCallbackError = o.onCallbackError ??
      ((err) => console.error("nixmsg: callback failed", err));
    this.#queue = new SendQueue({
      capacity: o.queueCapacity,
      maxInFlight: o.maxInFlight,
    });
    this.#receiver = new Receiver({
      ackMode: o.ackMode ?? "auto",
      dedupCapacity: o.dedupCapacity ?? 10_000,
      sendAck: (from, id) => this.#sendAck(from, id),
      sendReceiptAck: (receiptId) => {
        if (this.#link.online) {
          this.#request("receipt_ack", { receipt_id: receiptId }).catch(() => {});
        }
      },
      onCallbackError: this.#onCallbackError,
    });
    this.#link = new Link(
      {
        url: connectionUrl(url, o.transport),
        endpointId,
        credential,
        keepaliveSeconds: keepalive,
        connectTimeoutMs: o.connectTimeoutMs ?? 30_000,
        maxReceiveBytes,
        mqttVersion: o.mqttVersion ?? 5,
        clientName: CLIENT_NAME,
        tls: o.tls,
        nextRid: () => this.#nextRid(),
      },
      {
        state: (state, reason, retryInMs, error) =>
          this.#setState({
            state,
            reason,
            retryInMs,
            ...(error ? { error } : {}),
          }),
        online: (hello, offset, token) => this.#online(hello, offset, token),
        frame: (frame) => this.#frame(frame),
        down: () => this.#down(new NixMsgError("not_connected", "Connection lost")),
        stopped: (cause) => this.#stopped(cause),
      },
    );
  }

  /** The current connection state. */
  get state(): T.ConnectionState {
    return this.#state;
  }

  /** Limits from the last handshake, or null before the first. */
  get serverInfo(): T.ServerInfo | null {
    return this.#info;
  }

  /** Server clock minus local clock, in ms, measured at the last handshake (spec 9). */
  get clockOffsetMs(): number {
    return this.#offsetMs;
  }

  /** The session token reconnects use; null until a password login completes. */
  get sessionToken(): string | null {
    return this.#link.sessionToken;
  }

  /** The server's current time as this client estimates it. */
  serverNow(): number {
    return Date.now() + this.#offsetMs;
  }

  /**
   * Resolves with the server limits once online (at once when already online); rejects when
   * the client stops for good first (`kicked`, `auth_failed`, `closed`). With `timeoutMs`, it
   * rejects with `timeout` when not online by then; its `cause` is the last connection error
   * (`network` or `tls`, with the platform's error as their `cause`), so a wrong host or an
   * untrusted certificate shows instead of a silent retry.
   */
  ready(options: T.ReadyOptions = {}): Promise<T.ServerInfo> {
    if (this.#state === "online" && this.#info) {
      return Promise.resolve(this.#info);
    }
    const stopped = this.#stopError ?? this.#closingError;
    if (stopped) return Promise.reject(stopped);
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined && !(timeoutMs >= 0)) {
      return Promise.reject(
        new NixMsgError("bad_request", "timeoutMs must be 0 or more"),
      );
    }
    return new Promise((ok, fail) => {
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
        this.#ready.delete(w);
        const last = this.#link.lastError;
        fail(
          new NixMsgError(
            "timeout",
            `Not online after ${timeoutMs} ms` + (last ? `: ${last.message}` : ""),
            last ? { cause: last } : {},
          ),
        );
      }, timeoutMs);
      const w = {
        ok: (i: T.ServerInfo) => {
          clearTimeout(timer);
          ok(i);
        },
        fail: (e: NixMsgError) => {
          clearTimeout(timer);
          fail(e);
        },
      };
      this.#ready.add(w);
    });
  }

  /**
   * Called with each new session token (spec 5, 9): after a password login and after
   * `changeLoginPassword`. Save it and connect with `{ sessionToken }` next time. A token issued
   * before the callback was added is passed to it at once.
   */
  onSession(handler: (token: string) => void): () => void {
    if (this.#issuedToken !== null) handler(this.#issuedToken);
    return this.#sessions.add(handler);
  }

  /** Called on every connection state change. */
  onConnection(handler: (event: T.ConnectionEvent) => void): () => void {
    return this.#connections.add(handler);
  }

  /**
   * Called once per received message, serially. In auto mode the message is acked when the
   * callback returns (or its promise resolves); a throw leaves it unacked for a re-push.
   */
  onMessage(handler: (message: T.Message) => unknown): () => void {
    // (Listeners.add rejects anything but a function with bad_request.)
    return this.#receiver.messages.add(handler);
  }

  /** Called once per receipt (spec 6.4); receipts are acked after the callback returns. */
  onReceipt(handler: (receipt: T.Receipt) => unknown): () => void {
    return this.#receiver.receipts.add(handler);
  }

  /** Called when a message handed to the app was withdrawn before its ack (spec 6.4, 9). */
  onRevoked(handler: (revoked: T.Revoked) => unknown): () => void {
    return this.#receiver.revoked.add(handler);
  }

  /** Called with online/offline notices of watched endpoints (spec 6.5). */
  onPresence(handler: (event: T.PresenceEvent) => unknown): () => void {
    return this.#receiver.presence.add(handler);
  }

  /** Called with changes of groups this endpoint is in (spec 6.7). */
  onGroupEvent(handler: (event: T.GroupEvent) => unknown): () => void {
    return this.#receiver.groupEvents.add(handler);
  }

  /**
   * Sends a message (spec 6.2). Works while disconnected: the send waits in the queue and is
   * resent with the same id and content after a reconnect. Fails locally with
   * `body_too_large`, `meta_too_large`, `frame_too_large` or `queue_full`.
   *
   * @example
   * ```ts
   * const r = await client.send("door-1", "open", { keep: true, ttl: 3600 });
   * await client.send({ kind: "group", id: "g_ab12cd34" }, bytes, { delay: 10_000 });
   * ```
   */
  send(
    to: T.Recipient,
    body: string | Uint8Array,
    options: T.SendOptions = {},
  ): Promise<T.SendResult> {
    try {
      const stopped = this.#stopError ?? this.#closingError;
      if (stopped) throw stopped;
      const limits = this.#info ?? DEFAULT_LIMITS;
      const frame = buildSendFrame(to, body, options, limits, this.#offsetMs);
      const result = this.#queue.add(frame);
      this.#pump();
      return result;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Disconnects and stops for good (spec 9). New calls fail with `closed` at once; sends not
   * yet published fail with `closed`. The message callback running now is waited for and its
   * automatic ack is sent; then close waits up to `timeoutMs` (default 5,000) for the acks,
   * requests and sends in flight to be answered, and fails what is left with `closed`. When it
   * resolves, the client has cleared its timers and closed its socket (the platform releases
   * the socket handle within a moment). It can be called any number of times, from
   * any state and from inside a callback (it does not wait for the callback it is called from;
   * in an async callback, after an `await`, do not `await` it there).
   */
  close(options: T.CloseOptions = {}): Promise<void> {
    this.#closing ??= this.#close(options.timeoutMs ?? CLOSE_TIMEOUT_MS);
    return this.#closing;
  }

  async #close(timeoutMs: number): Promise<void> {
    if (!this.#stopError) {
      const closed = new NixMsgError("closed", "Client closed", {
        reason: "closed",
      });
      this.#closingError = closed;
      this.#queue.closeUnsent(closed);
      const receiving = this.#receiver.settled();
      this.#receiver.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, timeoutMs));
      });
      const drained = receiving.then(() =>
        new Promise<void>((resolve) => {
          this.#drained = resolve;
          this.#checkDrained();
        })
      );
      const done = await Promise.race([
        drained.then(() => true),
        bound.then(() => false),
      ]);
      clearTimeout(timer);
      this.#drained = null;
      // Past the bound, what is left is given up at once: no polite wait for PUBACKs.
      await this.#link.stop({ state: "offline", reason: "closed" }, !done);
      return;
    }
    await this.#link.stop({ state: "offline", reason: "closed" });
  }

  #checkDrained(): void {
    if (
      this.#drained && this.#pending.size === 0 && this.#queue.inFlight === 0
    ) {
      const done = this.#drained;
      this.#drained = null;
      done();
    }
  }

  /** Starts connecting (once). */
  protected start(): void {
    queueMicrotask(() => this.#link.start());
  }

  /** Sends a request frame and resolves with its `resp.data` (spec 6). */
  protected request(
    type: string,
    fields: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    if (this.#closingError && !this.#stopError) {
      return Promise.reject(this.#closingError);
    }
    return this.#request(type, fields);
  }

  /** The error every call fails with once the client stopped or began closing, else null. */
  protected get stopError(): NixMsgError | null {
    return this.#stopError ?? this.#closingError;
  }

  /** A new session token from the server: reconnects use it, `onSession` gets it. */
  protected useToken(token: string): void {
    this.#link.setSessionToken(token);
    this.#issued(token);
  }

  /** The receiver, for manual acks. */
  protected get receiver(): Receiver {
    return this.#receiver;
  }

  /** Runs after every successful handshake, the first and each reconnect. */
  protected handshaken(_first: boolean): void {}

  /** Stops for good with `cause`, also when the server closes the connection first. */
  protected async stopWith(cause: StopCause, during?: () => Promise<unknown>): Promise<void> {
    if (this.#link.online) this.#link.stopOnClose(cause);
    try {
      await during?.();
    } finally {
      await this.#link.stop(cause);
    }
  }

  #nextRid(): string {
    return (++this.#rid).toString(36);
  }

  #issued(token: string): void {
    this.#issuedToken = token;
    this.#sessions.emit(token, this.#onCallbackError);
  }

  #setState(event: T.ConnectionEvent): void {
    this.#state = event.state;
    this.#connections.emit(event, this.#onCallbackError);
  }

  #online(hello: wire.HelloData, offsetMs: number, token: string | null): void {
    this.#offsetMs = offsetMs;
    if (token !== null) this.#issued(token);
    const first = this.#info === null;
    this.#info = wire.toServerInfo(hello);
    const info = this.#info;
    queueMicrotask(() => {
      if (this.#state !== "online") return;
      for (const w of this.#ready) w.ok(info);
      this.#ready.clear();
    });
    this.#pump();
    this.handshaken(first);
  }

  #frame(f: wire.InboundFrame): void {
    switch (f.type) {
      case "resp":
        return this.#resp(f);
      case "msg": {
        const msg = wire.toMessage(f);
        if (msg) this.#receiver.message(msg);
        return;
      }
      case "receipt":
        return this.#receiver.receipt(wire.toReceipt(f));
      case "revoked":
        return this.#receiver.revoke(wire.toRevoked(f));
      case "presence":
        return this.#receiver.presenceEvent(wire.toPresence(f));
      case "group_event":
        return this.#receiver.groupEvent(wire.toGroupEvent(f));
    }
  }

  #resp(f: wire.InboundFrame): void {
    const rid = String(f.rid);
    const ok = f.ok === true;
    const error = ok ? undefined : wire.respError(f);
    if (this.#queue.has(rid)) {
      this.#queue.settle(rid, { ok, data: f.data, error }, Date.now());
      this.#pump();
      this.#checkDrained();
      return;
    }
    this.#pending.settle(rid, ok, f.data, error);
  }

  #request(type: string, fields: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.#stopError) return Promise.reject(this.#stopError);
    if (!this.#link.online) {
      return Promise.reject(new NixMsgError("not_connected", "Not connected to the server"));
    }
    const rid = this.#nextRid();
    let json: string;
    try {
      json = encodeFrame(
        { v: 1, type, rid, ...fields },
        (this.#info ?? DEFAULT_LIMITS).maxFrameBytes,
      );
    } catch (err) {
      return Promise.reject(err);
    }
    const answer = this.#pending.wait(rid, type);
    this.#link.publish(json);
    return answer;
  }

  async #sendAck(from: string, id: string): Promise<string | null> {
    if (!this.#link.online) return null;
    try {
      const d = await this.#request("ack", { from, id });
      return typeof d.result === "string" ? d.result : null;
    } catch {
      return null;
    }
  }

  #pump(): void {
    clearTimeout(this.#pumpTimer);
    this.#pumpTimer = undefined;
    if (!this.#link.online || this.#closingError || this.#stopError) return;
    const now = Date.now();
    for (;;) {
      const next = this.#queue.take(now, () => this.#nextRid());
      if (!next) break;
      this.#link.publish(JSON.stringify(frameFor(next.rid, next.frame)));
    }
    const due = this.#queue.nextDueAt(now);
    if (due !== undefined) {
      this.#pumpTimer = setTimeout(() => this.#pump(), due - now);
    }
  }

  #down(error: NixMsgError): void {
    this.#queue.requeueInFlight();
    this.#pending.failAll(this.#closingError ?? error);
    this.#checkDrained();
  }

  #stopped(cause: StopCause): void {
    clearTimeout(this.#pumpTimer);
    this.#pumpTimer = undefined;
    this.#receiver.close();
    const code = cause.state === "offline" ? "closed" : cause.state;
    const error = new NixMsgError(code, `Client stopped: ${cause.reason}`, {
      reason: cause.reason,
    });
    this.#stopError = error;
    this.#down(error);
    this.#queue.close(error);
    for (const w of this.#ready) w.fail(error);
    this.#ready.clear();
    this.#setState({
      state: cause.state,
      reason: cause.reason,
      ...(cause.state === "offline" ? {} : { error }),
    });
  }
}
