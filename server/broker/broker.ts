import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import { Aedes } from "aedes";
import type { MqttConn } from "../net/types.ts";
import type { Logger } from "../log/log.ts";
import { LogThrottle } from "../log/throttle.ts";
import { wsToStream } from "../net/ws_stream.ts";
import { connectLength, MAX_CONNECT_BYTES } from "../net/mqtt_head.ts";
import { encodeDisconnect, setConnackExtras } from "./codec.ts";
import { type KeepAliveRange, prepareConnect } from "./connect.ts";
import { Connection, MAX_INFLIGHT } from "./connection.ts";
import { patchRead } from "./read_patch.ts";
import { patchBufferList } from "./buffer_list_patch.ts";
import { patchParser } from "./parser_patch.ts";
import { KeepAliveTimers } from "./keep_alive.ts";
import type {
  AuthResult,
  Broker,
  BrokerHooks,
  BrokerOptions,
  ConnectInfo,
  PublishOutcome,
} from "./types.ts";

/** How long `close` lets clients take their last packets and hang up before it cuts them off. */
const FAREWELL_MS = 3000;

/** Spec 5 MaximumPacketSize: the default of `BrokerOptions.maxPacketSize`. */
export const MAX_PACKET_SIZE = 786432;

// MQTT 5 reason codes used here.
const PROTOCOL_ERROR = 0x82;
const SERVER_BUSY = 0x89;
const SERVER_SHUTTING_DOWN = 0x8b;
const SESSION_TAKEN_OVER = 0x8e;
const RETAIN_NOT_SUPPORTED = 0x9a;
const QOS_NOT_SUPPORTED = 0x9b;
// MQTT 3.1.1 CONNACK return codes, which aedes maps to MQTT 5 reason codes.
const RC_SERVER_UNAVAILABLE = 3;
const RC_BAD_CREDENTIALS = 4;

// deno-lint-ignore no-explicit-any
type AedesClient = any;
// deno-lint-ignore no-explicit-any
type Packet = any;
// deno-lint-ignore no-explicit-any
type Callback = (...args: any[]) => void;
/** On a PUBLISH: how many SUBSCRIBEs its connection had read before it. */
const SUBSCRIBES_BEFORE = Symbol("subscribesBefore");
// aedes' own typings lag its 2.0 beta API; it is driven untyped, inside this file only.
// deno-lint-ignore no-explicit-any
const AedesUntyped: any = Aedes;

/**
 * Start the built-in MQTT broker (spec 5): aedes 2.0 behind typed hooks.
 *
 * @example
 * ```ts
 * const broker = await createBroker({ maxClients: 2000, log, hooks });
 * listener.onMqtt = (conn) => broker.handle(conn);
 * const outcome = await broker.publish(connCode, frameBytes, 1); // "acked" | "dropped"
 * ```
 */
export async function createBroker(opts: BrokerOptions): Promise<Broker> {
  const broker = new AedesBroker(opts);
  aedesOf.set(broker, await broker.start());
  return broker;
}

const aedesOf = new WeakMap<Broker, unknown>();

/** Tests only: the aedes instance behind `broker`, to watch what it would route. */
// deno-lint-ignore no-explicit-any
export function aedesForTests(broker: Broker): any {
  return aedesOf.get(broker);
}

class AedesBroker implements Broker {
  #log: Logger;
  #hooks: BrokerHooks;
  #maxClients: number;
  #maxPacketSize: number;
  #keepAlive: KeepAliveRange;
  /** Every connection's keep-alive, on one runtime timer (issue 33). */
  readonly #keepAliveTimers = new KeepAliveTimers();
  // deno-lint-ignore no-explicit-any
  #aedes: any = null;
  #byClient = new WeakMap<AedesClient, Connection>();
  #byCode = new Map<string, Connection>();
  /** The connected connection of each ClientID. */
  #current = new Map<string, Connection>();
  #all = new Set<Connection>();
  #admitted = 0;
  #counts = { tcp: 0, ws: 0 };
  #closing: Promise<void> | null = null;
  #busyLog: LogThrottle;
  #codePrefix: string;

  constructor(opts: BrokerOptions) {
    this.#log = opts.log;
    this.#codePrefix = opts.connCodePrefix ?? "";
    this.#busyLog = new LogThrottle(opts.log);
    this.#hooks = opts.hooks;
    this.#maxClients = opts.maxClients;
    this.#maxPacketSize = opts.maxPacketSize ?? MAX_PACKET_SIZE;
    this.#keepAlive = { min: opts.keepAliveMin ?? 10, max: opts.keepAliveMax ?? 600 };
  }

  async start(): Promise<unknown> {
    const aedes = await AedesUntyped.createBroker({
      maximumPacketSize: this.#maxPacketSize,
      receiveMaximum: MAX_INFLIGHT,
      topicAliasMaximum: 0,
      preConnect: (c: AedesClient, p: Packet, cb: Callback) => this.#preConnect(c, p, cb),
      authenticate: (c: AedesClient, u: string | undefined, pw: Uint8Array, cb: Callback) =>
        void this.#authenticate(c, u, pw, cb),
      authorizePublish: (c: AedesClient, p: Packet, cb: Callback) =>
        this.#authorizePublish(c, p, cb),
      authorizeSubscribe: (c: AedesClient, sub: Packet, cb: Callback) =>
        cb(null, maySubscribe(this.#byClient.get(c), sub.topic) ? sub : null),
    });
    this.#aedes = aedes;
    // Nothing a client publishes is routed: it went to hooks.message in authorizePublish
    // (spec 5 CodeSuccessIgnore). Wills would come this way too; none are stored anyway.
    const route = aedes.publish.bind(aedes);
    aedes.publish = (packet: Packet, client: unknown, done?: () => void) => {
      if (client && typeof client === "object") queueMicrotask(() => done?.());
      else route(packet, client, done);
    };
    // Sessions are never kept (Session Expiry 0), so aedes stores no outgoing packets and QoS 2
    // (3.1.1 only) needs no incoming store: keep the in-memory persistence from growing.
    const store = aedes.persistence;
    store.outgoingClearMessageId = () => Promise.resolve(undefined);
    store.incomingStorePacket = () => Promise.resolve();
    store.incomingGetPacket = () => Promise.reject(new Error("Not stored"));
    store.incomingDelPacket = () => Promise.resolve();

    aedes.on("clientReady", (c: AedesClient) => this.#onReady(c));
    aedes.on("subscribe", (subs: Packet[], c: AedesClient) => this.#onSubscribe(subs, c));
    aedes.on("clientError", (c: AedesClient, err: Error) => this.#logClientError(c, err));
    aedes.on("connectionError", (c: AedesClient, err: Error) => this.#logClientError(c, err));
    aedes.on("error", (err: Error) => this.#log.error("MQTT broker error", { error: err.message }));
    return aedes;
  }

  handle(conn: MqttConn): void {
    const stream: Duplex = conn.transport === "ws" ? wsToStream(conn.ws) : conn.stream;
    if (this.#closing || stream.destroyed) {
      stream.destroy();
      return;
    }
    // deno-lint-ignore no-explicit-any
    (stream as any).setNoDelay?.(true);
    patchRead(stream);
    const c = new Connection(stream, conn.transport, conn.remoteAddress, conn.secure);
    if (conn.loggedIn) c.loggedIn = conn.loggedIn;
    this.#all.add(c);
    stream.once("close", () => this.#onClose(c));
    c.client = this.#aedes.handle(stream);
    this.#byClient.set(c.client, c);
    patchParser(c.client._parser);
    patchBufferList(c.client._parser._list);
    this.#capConnect(c, stream);
    // Inbound taps, in arrival order and ahead of aedes: PUBACKs settle our downlinks; granted
    // QoS is at most 1; each PUBLISH notes the SUBSCRIBEs read before it (see `inOrder`).
    c.client._parser.prependListener("packet", (p: Packet) => {
      if (p.cmd === "puback") c.acked(p.messageId);
      else if (p.cmd === "publish") p[SUBSCRIBES_BEFORE] = c.subscribesRead;
      else if (p.cmd === "subscribe") {
        c.subscribeRead();
        for (const s of p.subscriptions) if (s.qos > 1) s.qos = 1;
      }
    });
  }

  /**
   * issue 28: a CONNECT larger than {@linkcode MAX_CONNECT_BYTES} closes the connection before it
   * is parsed. A real one (ids of at most 64 characters, a password, no will) is far smaller,
   * and parsing a 60,000-character id into strings grew the heap by hundreds of MiB under a flood.
   * The listener already refuses such a CONNECT when its first bytes show it (TCP); this covers
   * WebSocket and a header that arrives in pieces.
   */
  #capConnect(c: Connection, stream: Duplex): void {
    const parser = c.client._parser;
    const parse = parser.parse.bind(parser);
    let head: Uint8Array | null = new Uint8Array(0);
    parser.parse = (buf: Uint8Array) => {
      if (head === null) return parse(buf);
      const joined = new Uint8Array(head.length + Math.min(buf.length, 5));
      joined.set(head);
      joined.set(buf.subarray(0, 5), head.length);
      const length = connectLength(joined);
      if (length === undefined) {
        head = joined;
        return parse(buf);
      }
      head = null;
      // The size is known: later reads go straight to the parser, and this closure is freed.
      delete (parser as { parse?: unknown }).parse;
      if (length === null || length <= MAX_CONNECT_BYTES) return parse(buf);
      this.#busyLog.line("info", "MQTT connection closed: CONNECT too large", "connect_size", {
        remote: c.remoteAddress,
        bytes: length,
        max_bytes: MAX_CONNECT_BYTES,
      }, { max_bytes: MAX_CONNECT_BYTES });
      stream.destroy();
      return 0;
    };
  }

  publish(connCode: string, payload: Uint8Array, qos: 0 | 1): Promise<PublishOutcome> {
    const c = this.#byCode.get(connCode);
    if (!c) return Promise.resolve("dropped");
    return c.publish(payload, qos).catch((err) => {
      this.#log.warn("MQTT publish failed", { conn: connCode, error: String(err) });
      return "dropped" as const;
    });
  }

  post(connCode: string, payload: Uint8Array, qos: 0 | 1): void {
    const c = this.#byCode.get(connCode);
    if (!c) return;
    try {
      c.post(payload, qos);
    } catch (err) {
      this.#log.warn("MQTT publish failed", { conn: connCode, error: String(err) });
    }
  }

  disconnect(connCode: string, reasonCode = 0): void {
    const c = this.#byCode.get(connCode);
    if (c && !c.closed) c.client.disconnect({ reasonCode });
  }

  clientCount(transport?: "tcp" | "ws"): number {
    return transport ? this.#counts[transport] : this.#counts.tcp + this.#counts.ws;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // Spec 7.8: what is already written (the last responses) leaves first, then MQTT 5 clients
    // get DISCONNECT 0x8B; each stream is ended, not destroyed, so no byte is dropped.
    const goodbye = encodeDisconnect(SERVER_SHUTTING_DOWN);
    const closed = await Promise.all([...this.#all].map((c) => {
      const v5 = c.connected && c.facts?.protocolVersion === 5 && !c.client.closed;
      if (v5) c.client.disconnectReasonCode = SERVER_SHUTTING_DOWN;
      return c.farewell(v5 ? goodbye : null, FAREWELL_MS);
    }));
    const late = closed.filter((ok) => !ok).length;
    if (late > 0) {
      this.#log.warn("MQTT connections still open after the shutdown farewell; closing them", {
        connections: late,
        wait_ms: FAREWELL_MS,
      });
    }
    for (const c of this.#all) c.client.close();
    this.#busyLog.close();
    this.#keepAliveTimers.close();
    await new Promise<void>((resolve) => this.#aedes.close(() => resolve()));
    await Promise.all([...this.#all].map((c) => c.done));
  }

  // Spec 5 OnConnect: normalise the CONNECT before aedes acts on it.
  #preConnect(client: AedesClient, packet: Packet, cb: Callback): void {
    const c = this.#byClient.get(client);
    if (!c || this.#closing) return cb(new Error("Broker is closing"), false);
    const prepared = prepareConnect(packet, this.#keepAlive);
    c.setFacts(prepared.facts);
    // aedes announces Server Keep Alive and runs its timer from this field.
    if (prepared.serverKeepAlive !== undefined) client._serverKeepAlive = prepared.serverKeepAlive;
    setConnackExtras(c.stream, prepared.extras);
    cb(null, true);
  }

  async #authenticate(client: AedesClient, user: string | undefined, pw: Uint8Array, cb: Callback) {
    const c = this.#byClient.get(client);
    const facts = c?.facts;
    if (!c || !facts) return cb(new Error("Unknown connection"), false);
    const username = user ?? "";
    // Spec 5: ClientID and Username are both the endpoint id.
    if (facts.clientId === "" || facts.clientId !== username) {
      return cb(connectError("ClientID must equal Username", RC_BAD_CREDENTIALS), false);
    }
    if (this.#full(facts.clientId)) return this.#refuseBusy(c, cb);
    const info: ConnectInfo = {
      connCode: this.#codePrefix + randomBytes(8).toString("hex"),
      clientId: facts.clientId,
      username,
      password: pw ? new TextDecoder().decode(pw) : "",
      protocolVersion: facts.protocolVersion,
      keepAlive: facts.keepAlive,
      maxPacketSize: facts.maxPacketSize,
      transport: c.transport,
      remoteAddress: c.remoteAddress,
      secure: c.secure,
    };
    c.info = info;
    c.authenticating = true;
    let result: AuthResult;
    try {
      result = await this.#hooks.authenticate(info);
    } catch (err) {
      this.#log.error("MQTT authenticate hook failed", { conn: info.connCode, error: String(err) });
      result = { ok: false, reason: "error" };
    }
    c.authenticating = false;
    this.#abandonIfGone(c);
    if (client.closed) return cb(new Error("Connection closed"), false);
    if (this.#closing || (!result.ok && result.reason === "error")) {
      // Spec 5: an internal failure sends no CONNACK; the client retries like a network fault.
      client.close();
      return cb(new Error("Authentication failed internally"), false);
    }
    if (!result.ok && result.reason === "busy") {
      return this.#refuseBusy(c, cb, "password checks queued");
    }
    if (!result.ok) return cb(connectError("Bad credentials", RC_BAD_CREDENTIALS), false);
    if (this.#full(facts.clientId)) return this.#refuseBusy(c, cb);
    c.admitted = true;
    c.loggedIn();
    this.#admitted++;
    this.#byCode.set(info.connCode, c);
    cb(null, true);
  }

  #full(clientId: string): boolean {
    // A takeover replaces a connection, so it is never refused for capacity.
    return this.#admitted >= this.#maxClients && !this.#current.has(clientId);
  }

  #refuseBusy(c: Connection, cb: Callback, why = "max_clients reached"): void {
    // Spec 5: "server busy" 0x89 for MQTT 5, "server unavailable" 3 for 3.1.1.
    setConnackExtras(c.stream, { failureReasonCode: SERVER_BUSY });
    this.#busyLog.line("warn", "MQTT client refused: server busy", why, {
      why,
      max_clients: this.#maxClients,
    }, { why });
    cb(connectError("Server busy", RC_SERVER_UNAVAILABLE), false);
  }

  // Spec 5/12 OnACLCheck + OnPublish: only the own up topic; hand the payload to the app and
  // PUBACK once the app took it, so a full queue back-pressures the reader.
  #authorizePublish(client: AedesClient, packet: Packet, cb: Callback): void {
    const c = this.#byClient.get(client);
    if (!c) return cb(new Error("Topic not allowed"));
    // Packets are handled in arrival order: wait for the SUBSCRIBEs read before this PUBLISH.
    c.inOrder(packet[SUBSCRIBES_BEFORE] ?? 0, () => this.#admitPublish(c, client, packet, cb));
  }

  #admitPublish(c: Connection, client: AedesClient, packet: Packet, cb: Callback): void {
    const info = c.info;
    // A foreign topic, MQTT 5: QoS 1 gets PUBACK 0x87, written as 0x80 (codec.ts), and QoS 0
    // is dropped; 3.1.1: the connection is closed.
    if (packet.qos > 0 && !packet.messageId) {
      // [MQTT-2.2.1-3] a QoS 1 or 2 PUBLISH needs a non-zero packet identifier: protocol error.
      this.#log.debug("MQTT protocol error: packet id 0", { conn: info?.connCode });
      packet._notAuthorized = true; // aedes then sends no ack and routes nothing
      client.disconnect({ reasonCode: PROTOCOL_ERROR }, () => cb(null));
      return;
    }
    if (!info || packet.topic !== c.upTopic) return cb(new Error("Topic not allowed"));
    if (info.protocolVersion === 5 && (packet.qos === 2 || packet.retain)) {
      // CONNACK announced Maximum QoS 1 and Retain Available 0 (MQTT 5 §3.2.2.3.4, §3.2.2.3.5).
      packet._notAuthorized = true; // aedes then sends no ack and routes nothing
      const reasonCode = packet.qos === 2 ? QOS_NOT_SUPPORTED : RETAIN_NOT_SUPPORTED;
      client.disconnect({ reasonCode }, () => cb(null));
      return;
    }
    const fail = (err: unknown) => {
      this.#log.warn("MQTT message hook failed", { conn: info.connCode, error: String(err) });
      packet._notAuthorized = true; // no PUBACK: the client sends it again after reconnecting
      client.close();
      cb(null);
    };
    let pending: Promise<void> | void;
    try {
      pending = this.#hooks.message(info.connCode, new Uint8Array(packet.payload));
    } catch (err) {
      return fail(err);
    }
    if (!pending) return cb(null);
    pending.then(() => {
      if (client.closed) packet._notAuthorized = true;
      cb(null);
    }, fail);
  }

  #onReady(client: AedesClient): void {
    const c = this.#byClient.get(client);
    const info = c?.info;
    if (!c || !info || c.closed || client.closed) return;
    c.connected = true;
    this.#shareKeepAlive(c);
    this.#counts[c.transport]++;
    // aedes already started the takeover (0x8E) in registerClient; this catches the rare
    // case where its own table lost track of the old connection.
    const previous = this.#current.get(info.clientId);
    this.#current.set(info.clientId, c);
    if (previous && !previous.closed && !previous.client.closed) {
      previous.client.disconnect({ reasonCode: SESSION_TAKEN_OVER });
    }
    this.#call("connected", () => this.#hooks.connected(info));
  }

  #onSubscribe(subs: Packet[], client: AedesClient): void {
    const c = this.#byClient.get(client);
    if (!c) return;
    const info = c.info;
    for (const s of subs) {
      if (info && s.qos < 0x80) {
        this.#call("subscribed", () => this.#hooks.subscribed(info.connCode, s.topic));
      }
    }
    c.subscribeDone();
  }

  /**
   * issue 33: the keep-alive timer aedes armed at CONNECT [MQTT-3.1.2-24] moves to the shared
   * timer (keep_alive.ts), with the same interval and callback; aedes keeps calling `refresh()` on
   * it for every packet, and its `clearTimeout` on close does nothing to it (#onClose removes it).
   */
  #shareKeepAlive(c: Connection): void {
    const client = c.client;
    const timer = client._keepaliveTimer;
    const onTimeout = timer?._onTimeout;
    if (!(client._keepaliveInterval > 0) || typeof onTimeout !== "function") return;
    clearTimeout(timer);
    c.keepAlive = this.#keepAliveTimers.add(client._keepaliveInterval, onTimeout);
    client._keepaliveTimer = c.keepAlive;
  }

  #onClose(c: Connection): void {
    c.markClosed();
    if (c.keepAlive !== null) this.#keepAliveTimers.remove(c.keepAlive);
    this.#all.delete(c);
    if (c.admitted) this.#admitted--;
    const info = c.info;
    if (!info) return;
    this.#byCode.delete(info.connCode);
    if (!c.connected) return this.#abandonIfGone(c);
    this.#counts[c.transport]--;
    if (this.#current.get(info.clientId) === c) this.#current.delete(info.clientId);
    this.#call("disconnected", () => this.#hooks.disconnected(info.connCode, info.clientId));
  }

  /** Fires `abandoned` once for a closed connection that authenticated but never connected. */
  #abandonIfGone(c: Connection): void {
    const info = c.info;
    if (!info || !c.closed || c.connected || c.authenticating || c.abandoned) return;
    c.abandoned = true;
    this.#call("abandoned", () => this.#hooks.abandoned(info.connCode));
  }

  #call(hook: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error("MQTT broker hook threw", { hook, error: String(err) });
    }
  }

  #logClientError(client: AedesClient, err: Error): void {
    const conn = this.#byClient.get(client)?.info?.connCode;
    this.#log.debug("MQTT client error", { conn, error: err.message });
  }
}

/**
 * Spec 5/12 OnACLCheck: only the own down topic, and never as a wildcard filter (wildcard
 * subscriptions are not available, even for a ClientID that contains `+`). Refused topics get
 * SUBACK 0x80 (aedes' MQTT 5 0x87 is obscured in codec.ts; 3.1.1 has only 0x80).
 */
function maySubscribe(c: Connection | undefined, topic: string): boolean {
  return c !== undefined && c.info !== null && topic === c.downTopic && !/[+#]/.test(topic);
}

/** An aedes authenticate error carrying a 3.1.1 return code (aedes maps it for MQTT 5). */
function connectError(message: string, returnCode: number): Error {
  return Object.assign(new Error(message), { returnCode });
}
