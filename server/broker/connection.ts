import { Buffer } from "node:buffer";
import process from "node:process";
import type { Duplex } from "node:stream";
import { encodePublish, publishWireSize } from "./codec.ts";
import type { ConnectInfo, PublishOutcome } from "./types.ts";
import type { KeepAliveHandle } from "./keep_alive.ts";

/** Most unacknowledged QoS 1 downlinks per client (spec 5 MaximumInflight). */
export const MAX_INFLIGHT = 1024;
/** Most downlink writes queued on one connection (spec 5 MaximumClientWritesPending). */
export const MAX_WRITES_PENDING = 1024;

const IGNORE = (_outcome: PublishOutcome): void => {};

/** The CONNECT facts the adapter keeps, read before aedes handles the CONNECT. */
export interface ConnectFacts {
  readonly clientId: string;
  readonly protocolVersion: 4 | 5;
  readonly keepAlive: number;
  readonly maxPacketSize: number | null;
  /** The client's Receive Maximum: how many QoS 1 downlinks it takes unacknowledged. */
  readonly receiveMaximum: number;
}

/** One MQTT connection as the adapter tracks it, from `handle` to the stream's `close`. */
export class Connection {
  readonly stream: Duplex;
  readonly transport: "tcp" | "ws";
  readonly remoteAddress: string;
  readonly secure: boolean;
  /** The aedes client; `any` stays inside server/broker/. */
  // deno-lint-ignore no-explicit-any
  client: any = null;
  facts: ConnectFacts | null = null;
  /** Set once authentication starts; carries the connection code. */
  info: ConnectInfo | null = null;
  upTopic = "";
  downTopic = "";
  /** Tells the listener that this connection logged in (issue 28: the pre-login caps). */
  loggedIn: () => void = () => {};
  /** Passed authentication; counts against maxClients until closed. */
  admitted = false;
  /** The `connected` hook fired; `disconnected` is owed. */
  connected = false;
  /** The `authenticate` hook has been called and has not settled yet. */
  authenticating = false;
  /** The `abandoned` hook fired. */
  abandoned = false;
  closed = false;
  /** Its keep-alive in the broker's shared timer (issue 33), once connected. */
  keepAlive: KeepAliveHandle | null = null;
  /** Resolves when the stream has closed. */
  readonly done: Promise<void>;
  #resolveDone!: () => void;
  #downTopicBytes: Uint8Array = new Uint8Array(0);
  #inflight = new Map<number, (outcome: PublishOutcome) => void>();
  #inflightMax = MAX_INFLIGHT;
  #nextId = 1;
  #writesPending = 0;
  /** SUBSCRIBEs read from the client, and how many of them aedes has finished. */
  #subscribesRead = 0;
  #subscribesDone = 0;
  /** PUBLISHes held until the SUBSCRIBEs read before them are done, in arrival order. */
  #held: Array<{ readonly after: number; readonly run: () => void }> = [];

  constructor(stream: Duplex, transport: "tcp" | "ws", remoteAddress: string, secure: boolean) {
    this.stream = stream;
    this.transport = transport;
    this.remoteAddress = remoteAddress;
    this.secure = secure;
    this.done = new Promise((resolve) => this.#resolveDone = resolve);
  }

  /** Record the CONNECT and derive the ACL topics (spec 5: only `nix/c/{id}/up|down`). */
  setFacts(facts: ConnectFacts): void {
    this.facts = facts;
    this.upTopic = `nix/c/${facts.clientId}/up`;
    this.downTopic = `nix/c/${facts.clientId}/down`;
    this.#downTopicBytes = Buffer.from(this.downTopic);
    this.#inflightMax = Math.min(MAX_INFLIGHT, facts.receiveMaximum);
  }

  /** Publish to this client's down topic; see `Broker.publish`. Never throws. */
  publish(payload: Uint8Array, qos: 0 | 1): Promise<PublishOutcome> {
    return new Promise((resolve) => this.#send(payload, qos, resolve));
  }

  /** `publish` without waiting for the outcome; see `Broker.post`. */
  post(payload: Uint8Array, qos: 0 | 1): void {
    this.#send(payload, qos, IGNORE);
  }

  #send(payload: Uint8Array, qos: 0 | 1, done: (outcome: PublishOutcome) => void): void {
    const facts = this.facts;
    if (!this.connected || this.closed || !facts || this.client.closed) return done("dropped");
    // Spec 5: a full client write queue drops the downlink; the app retries (spec 7.5).
    if (this.#writesPending >= MAX_WRITES_PENDING) return done("dropped");
    // Never exceed the client's Maximum Packet Size [MQTT-3.1.2-24]; the app checks first.
    const v = facts.protocolVersion;
    const size = publishWireSize(this.#downTopicBytes.byteLength, payload.byteLength, qos, v);
    if (facts.maxPacketSize !== null && size > facts.maxPacketSize) return done("dropped");
    if (qos === 0) {
      const frame = encodePublish(this.#downTopicBytes, payload, 0, undefined, v);
      this.#write(frame, (err) => done(err ? "dropped" : "sent"));
      return;
    }
    if (this.#inflight.size >= this.#inflightMax) return done("dropped");
    const id = this.#allocateId();
    const frame = encodePublish(this.#downTopicBytes, payload, 1, id, v);
    this.#inflight.set(id, done);
    this.#write(frame, (err) => {
      if (err) this.#settle(id, "dropped");
    });
  }

  /** A SUBSCRIBE was read; returns how many have been read so far, this one included. */
  subscribeRead(): number {
    return ++this.#subscribesRead;
  }

  /** How many SUBSCRIBEs have been read so far. */
  get subscribesRead(): number {
    return this.#subscribesRead;
  }

  /** aedes finished a SUBSCRIBE (SUBACK written): release the PUBLISHes that waited for it. */
  subscribeDone(): void {
    this.#subscribesDone++;
    while (this.#held.length > 0 && this.#held[0].after <= this.#subscribesDone) {
      this.#held.shift()!.run();
    }
  }

  /**
   * Runs `run` for a PUBLISH once the first `after` SUBSCRIBEs (those read before it) are done,
   * and after every PUBLISH held before it. aedes handles the packets of one read concurrently
   * and finishes a SUBSCRIBE asynchronously; a pipelined `hello` must still see its
   * subscription (DESIGN pitfall 10). Runs at once when nothing is pending.
   */
  inOrder(after: number, run: () => void): void {
    if (this.#held.length === 0 && after <= this.#subscribesDone) return run();
    this.#held.push({ after, run });
  }

  /**
   * Ends the connection gracefully: writes `last` (if any) after everything already queued,
   * ends the stream, and resolves once the stream has closed, normally when the peer closed its
   * side, or after `waitMs`. `destroy` would drop bytes not yet flushed. Returns false when
   * `waitMs` passed first.
   */
  async farewell(last: Uint8Array | null, waitMs: number): Promise<boolean> {
    const stream = this.stream;
    if (this.closed || stream.destroyed) return true;
    // From here on, what the client sends is read and dropped instead of parsed. Input left
    // unread would keep the stream from ending when the client closes, so this wait would run
    // to its timeout and the stream be destroyed; and closing a TCP socket with unread input
    // resets it, which can lose the last bytes written, the DISCONNECT among them.
    // What is buffered already is dropped at once, in case no further `readable` event comes.
    if (this.client?._nextBatch) stream.off("readable", this.client._nextBatch);
    const drop = () => {
      while (stream.read() !== null) { /* dropped */ }
    };
    stream.on("readable", drop);
    drop();
    if (last && stream.writable) stream.write(last);
    if (stream.writable) stream.end();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closed = await Promise.race([
      this.done.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), waitMs))),
    ]);
    clearTimeout(timer);
    return closed;
  }

  /** A PUBACK arrived for `messageId`. */
  acked(messageId: number): void {
    this.#settle(messageId, "acked");
  }

  /** The stream closed: every unacknowledged downlink is dropped. */
  markClosed(): void {
    this.closed = true;
    this.#held.length = 0;
    const pending = [...this.#inflight.values()];
    this.#inflight.clear();
    for (const resolve of pending) resolve("dropped");
    this.#resolveDone();
  }

  #settle(messageId: number, outcome: PublishOutcome): void {
    const resolve = this.#inflight.get(messageId);
    if (!resolve) return;
    this.#inflight.delete(messageId);
    resolve(outcome);
  }

  #allocateId(): number {
    // At most MAX_INFLIGHT of 65535 ids are taken, so this loop is short.
    let id = this.#nextId;
    while (this.#inflight.has(id)) id = id === 65535 ? 1 : id + 1;
    this.#nextId = id === 65535 ? 1 : id + 1;
    return id;
  }

  #write(frame: Buffer, cb: (err: Error | null | undefined) => void): void {
    this.#writesPending++;
    const stream = this.stream;
    // Like mqtt-packet: writes of this tick (e.g. the downlink and aedes' PUBACK) leave
    // together, as one syscall or one WebSocket frame.
    stream.cork();
    process.nextTick(() => stream.uncork());
    stream.write(frame, (err) => {
      this.#writesPending--;
      cb(err);
    });
  }
}
