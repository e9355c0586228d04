// Test helpers for the broker: real servers on port 0, a recording hook set, a raw MQTT client.
import { Buffer } from "node:buffer";
import { once } from "node:events";
import { createServer, type Server as HttpServer } from "node:http";
import net from "node:net";
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import { WebSocket, WebSocketServer } from "ws";
import mqttPacket from "mqtt-packet";
import { silentLogger } from "../log/log.ts";
import { createBroker } from "./broker.ts";
import type { AuthResult, Broker, BrokerOptions, ConnectInfo } from "./types.ts";

export const PASSWORD = "secret";
const WAIT_MS = 5000;

/** Resolves when `check()` holds, re-checked whenever `notify` fires; fails after 5 s. */
export class Waiter {
  #waiters = new Set<() => void>();

  notify(): void {
    for (const w of [...this.#waiters]) w();
  }

  until(check: () => boolean, what = "condition"): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`Timed out waiting for ${what}`));
      }, WAIT_MS);
      const waiter = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#waiters.delete(waiter);
        resolve();
      };
      this.#waiters.add(waiter);
    });
  }
}

/** Broker hooks that record every call; `auth` and `onMessage` are replaceable. */
export class HookLog extends Waiter {
  auth: (info: ConnectInfo) => Promise<AuthResult> = (info) =>
    Promise.resolve(
      info.password === PASSWORD ? { ok: true } : { ok: false, reason: "bad_credentials" },
    );
  onMessage: (connCode: string, payload: Uint8Array) => Promise<void> | void = () => {};
  authenticated: ConnectInfo[] = [];
  connected: ConnectInfo[] = [];
  subscribed: Array<{ connCode: string; topic: string }> = [];
  messages: Array<{ connCode: string; text: string }> = [];
  disconnected: Array<{ connCode: string; clientId: string }> = [];
  abandoned: string[] = [];

  hooks = {
    authenticate: (info: ConnectInfo) => {
      this.authenticated.push(info);
      this.notify();
      return this.auth(info);
    },
    connected: (info: ConnectInfo) => {
      this.connected.push(info);
      this.notify();
    },
    subscribed: (connCode: string, topic: string) => {
      this.subscribed.push({ connCode, topic });
      this.notify();
    },
    message: (connCode: string, payload: Uint8Array) => {
      this.messages.push({ connCode, text: new TextDecoder().decode(payload) });
      this.notify();
      return this.onMessage(connCode, payload);
    },
    disconnected: (connCode: string, clientId: string) => {
      this.disconnected.push({ connCode, clientId });
      this.notify();
    },
    abandoned: (connCode: string) => {
      this.abandoned.push(connCode);
      this.notify();
    },
  };

  /** The connection code of the latest `connected` client with this id. */
  codeOf(clientId: string): string {
    const info = this.connected.findLast((i) => i.clientId === clientId);
    if (!info) throw new Error(`${clientId} is not connected`);
    return info.connCode;
  }

  disconnectsOf(connCode: string): number {
    return this.disconnected.filter((d) => d.connCode === connCode).length;
  }
}

/** A broker behind a TCP server and a WebSocket server, both on port 0. */
export interface TestBroker {
  broker: Broker;
  log: HookLog;
  /** `mqtt://127.0.0.1:port` or `ws://127.0.0.1:port/mqtt`. */
  url(transport: "tcp" | "ws"): string;
  /** Called with each server-side WebSocket before the broker gets it. */
  onWs?: (ws: WebSocket) => void;
  /** Called with each server-side TCP socket before the broker gets it. */
  onSocket?: (socket: net.Socket) => void;
  close(): Promise<void>;
}

export async function startBroker(opts: Partial<BrokerOptions> = {}): Promise<TestBroker> {
  const log = new HookLog();
  const broker = await createBroker({
    maxClients: 2000,
    log: silentLogger,
    hooks: log.hooks,
    ...opts,
  });
  const tcp = net.createServer((socket) => {
    test.onSocket?.(socket);
    broker.handle({ transport: "tcp", stream: socket, remoteAddress: "127.0.0.1", secure: false });
  });
  const http: HttpServer = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => protocols.has("mqtt") ? "mqtt" : false,
  });
  http.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      test.onWs?.(ws);
      broker.handle({ transport: "ws", ws, remoteAddress: "127.0.0.1", secure: false });
    });
  });
  tcp.listen(0, "127.0.0.1");
  http.listen(0, "127.0.0.1");
  await Promise.all([once(tcp, "listening"), once(http, "listening")]);
  const port = (s: net.Server | HttpServer) => (s.address() as net.AddressInfo).port;
  const test: TestBroker = {
    broker,
    log,
    url: (t) => t === "tcp" ? `mqtt://127.0.0.1:${port(tcp)}` : `ws://127.0.0.1:${port(http)}/mqtt`,
    async close() {
      await broker.close();
      for (const ws of wss.clients) ws.terminate();
      await Promise.all([
        new Promise((r) => tcp.close(r)),
        new Promise((r) => wss.close(r)),
        new Promise((r) => http.close(r)),
      ]);
    },
  };
  return test;
}

/** An MQTT.js client that never reconnects. Always `end()` it. */
export function client(url: string, id: string, opts: IClientOptions = {}): MqttClient {
  const c = mqtt.connect(url, {
    clientId: id,
    username: id,
    password: PASSWORD,
    protocolVersion: 5,
    reconnectPeriod: 0,
    connectTimeout: WAIT_MS,
    ...opts,
  });
  c.on("error", () => {}); // observed with event(c, "error")
  return c;
}

/**
 * The arguments of the next `name` event of an MQTT.js client. Waiting for anything but
 * `error` rejects on an `error` first.
 */
export function event<T extends unknown[] = unknown[]>(c: MqttClient, name: string): Promise<T> {
  // deno-lint-ignore no-explicit-any
  const e = c as any;
  return new Promise((resolve, reject) => {
    const onEvent = (...args: unknown[]) => {
      e.off("error", onError);
      resolve(args as T);
    };
    const onError = (err: Error) => {
      e.off(name, onEvent);
      reject(err);
    };
    e.once(name, onEvent);
    if (name !== "error") e.once("error", onError);
  });
}

/** Every packet an MQTT.js client received, by command. */
export function received(c: MqttClient): string[] {
  const cmds: string[] = [];
  c.on("packetreceive", (p) => cmds.push(p.cmd));
  return cmds;
}

export function end(...clients: MqttClient[]): Promise<unknown> {
  return Promise.all(clients.map((c) => c.endAsync(true)));
}

// deno-lint-ignore no-explicit-any
export type RawPacket = any;

/**
 * A hand-driven MQTT client: writes each packet as its own write (its own WebSocket frame), and
 * collects what the server sends. For tests that need exact control over the bytes.
 */
export class RawClient extends Waiter {
  packets: RawPacket[] = [];
  closed = false;
  #send: (bytes: Buffer) => Promise<void>;
  #close: () => void;

  private constructor(send: (b: Buffer) => Promise<void>, close: () => void) {
    super();
    this.#send = send;
    this.#close = close;
  }

  static async open(url: string, protocolVersion = 5): Promise<RawClient> {
    const parser = mqttPacket.parser({ protocolVersion });
    let raw: RawClient;
    if (url.startsWith("ws:")) {
      const ws = new WebSocket(url, "mqtt");
      await once(ws, "open");
      raw = new RawClient(
        (b) => new Promise((res, rej) => ws.send(b, (e) => e ? rej(e) : res())),
        () => ws.terminate(),
      );
      ws.on("message", (d) => parser.parse(d as Buffer));
      ws.on("close", () => raw.#closed());
    } else {
      const port = Number(new URL(url).port);
      const socket = net.connect(port, "127.0.0.1");
      socket.setNoDelay(true);
      await once(socket, "connect");
      raw = new RawClient(
        (b) => new Promise((res, rej) => socket.write(b, (e) => e ? rej(e) : res())),
        () => socket.destroy(),
      );
      socket.on("data", (d) => parser.parse(d as Buffer));
      socket.on("error", () => {});
      socket.on("close", () => raw.#closed());
    }
    parser.on("packet", (p: RawPacket) => {
      raw.packets.push(p);
      raw.notify();
    });
    return raw;
  }

  /** Encode and write one packet; resolves once it was handed to the socket. */
  send(packet: RawPacket, protocolVersion = 5): Promise<void> {
    return this.#send(encode(packet, protocolVersion));
  }

  /** Write bytes as they are. */
  sendBytes(bytes: Buffer): Promise<void> {
    return this.#send(bytes);
  }

  of(cmd: string): RawPacket[] {
    return this.packets.filter((p) => p.cmd === cmd);
  }

  close(): Promise<void> {
    this.#close();
    return this.until(() => this.closed, "raw client close");
  }

  #closed(): void {
    this.closed = true;
    this.notify();
  }
}

/** One MQTT packet as bytes. */
export function encode(packet: RawPacket, protocolVersion = 5): Buffer {
  return mqttPacket.generate(packet, { protocolVersion });
}
