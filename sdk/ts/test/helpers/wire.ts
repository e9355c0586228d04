/**
 * A proxy in front of the server that records how the client's bytes are framed: for a
 * WebSocket connection, every client-to-server frame (RFC 6455 5.2, unmasked), so that a test can
 * tell how many frames each MQTT packet took. With `tls` it terminates TLS itself (for `wss://`
 * and `mqtts://`) and forwards plaintext. Its own sockets set TCP_NODELAY, so the proxy adds no
 * Nagle delay of its own.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { Events } from "./events.ts";

/** One client-to-server WebSocket frame. */
export interface WsFrame {
  /** 1 text, 2 binary, 0 continuation, 8 close, 9 ping, 10 pong. */
  readonly opcode: number;
  readonly payload: Buffer;
}

/** One MQTT packet found in the concatenated binary frames, and the frames it spans. */
export interface PacketSpan {
  /** MQTT control packet type (3.1.1 / 5.0 section 2.1.2): 1 CONNECT, 3 PUBLISH, 4 PUBACK … */
  readonly type: number;
  /** Index of the frame holding its first byte. */
  readonly firstFrame: number;
  /** Index of the frame holding its last byte. */
  readonly lastFrame: number;
  /** True when it starts at the start of its first frame. */
  readonly startsFrame: boolean;
}

/** MQTT packet type numbers used by the tests. */
export const MQTT = {
  CONNECT: 1,
  PUBLISH: 3,
  PUBACK: 4,
  SUBSCRIBE: 8,
  DISCONNECT: 14,
} as const;

/** A TLS key and self-signed certificate for 127.0.0.1, made with the `openssl` CLI. */
export interface TestCert {
  readonly key: string;
  readonly cert: string;
}

/** Makes a throwaway P-256 certificate for 127.0.0.1 and localhost (needs `openssl`). */
export function makeCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), "nixmsg-sdk-tls-"));
  try {
    execFileSync("openssl", [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-days", "2", "-subj", "/CN=nixmsg-sdk-test"],
      ...["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
      ...["-addext", "basicConstraints=critical,CA:FALSE"],
      ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
    ], { stdio: ["ignore", "ignore", "pipe"] });
    return {
      key: readFileSync(join(dir, "key.pem"), "utf8"),
      cert: readFileSync(join(dir, "cert.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Splits RFC 6455 frames out of a growing buffer; returns the bytes not yet parsed. */
function takeFrames(buf: Buffer, out: (f: WsFrame) => void): Buffer {
  let at = 0;
  for (;;) {
    if (buf.length - at < 2) break;
    const b0 = buf[at]!;
    const b1 = buf[at + 1]!;
    const masked = (b1 & 0x80) !== 0;
    let len = b1 & 0x7f;
    let head = 2;
    if (len === 126) {
      if (buf.length - at < 4) break;
      len = buf.readUInt16BE(at + 2);
      head = 4;
    } else if (len === 127) {
      if (buf.length - at < 10) break;
      len = Number(buf.readBigUInt64BE(at + 2));
      head = 10;
    }
    const maskAt = at + head;
    if (masked) head += 4;
    if (buf.length - at < head + len) break;
    const payload = Buffer.from(buf.subarray(at + head, at + head + len));
    if (masked) {
      for (let i = 0; i < payload.length; i++) {
        payload[i] = payload[i]! ^ buf[maskAt + (i % 4)]!;
      }
    }
    out({ opcode: b0 & 0x0f, payload });
    at += head + len;
  }
  return buf.subarray(at);
}

/**
 * The MQTT packets carried by `frames` (binary and continuation frames, in order), with the frames
 * each one spans. A trailing incomplete packet is left out.
 */
export function packetSpans(frames: readonly WsFrame[]): PacketSpan[] {
  const data = frames.filter((f) => f.opcode === 2 || f.opcode === 0);
  const owner: number[] = [];
  const starts = new Set<number>();
  data.forEach((f, i) => {
    starts.add(owner.length);
    for (let k = 0; k < f.payload.length; k++) owner.push(i);
  });
  const bytes = Buffer.concat(data.map((f) => f.payload));
  const spans: PacketSpan[] = [];
  let at = 0;
  while (at < bytes.length) {
    // Fixed header: type nibble, then the Remaining Length variable byte integer (2.1.4).
    let len = 0;
    let mul = 1;
    let i = at + 1;
    let complete = false;
    while (i < bytes.length && i <= at + 4) {
      const b = bytes[i++]!;
      len += (b & 0x7f) * mul;
      mul *= 128;
      if ((b & 0x80) === 0) {
        complete = true;
        break;
      }
    }
    if (!complete || i + len > bytes.length) break;
    const end = i + len - 1;
    spans.push({
      type: bytes[at]! >> 4,
      firstFrame: owner[at]!,
      lastFrame: owner[end]!,
      startsFrame: starts.has(at),
    });
    at = end + 1;
  }
  return spans;
}

/** A TCP (or TLS-terminating) proxy that records WebSocket frames from clients. */
export class WireProxy {
  /** Client-to-server WebSocket frames of every connection, in arrival order per connection. */
  readonly frames = new Events<WsFrame & { readonly conn: number }>();
  /** The HTTP upgrade request head of every WebSocket connection, in accept order. */
  readonly upgrades = new Events<string>();
  readonly #server: net.Server;
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<net.Socket>();
  #conns = 0;

  private constructor(server: net.Server, target: { host: string; port: number }) {
    this.#server = server;
    this.#target = target;
  }

  /** Starts on 127.0.0.1:0, forwarding to `target` ("host:port"); `tls` terminates TLS. */
  static async start(target: string, options: { tls?: TestCert } = {}): Promise<WireProxy> {
    const i = target.lastIndexOf(":");
    const dest = { host: target.slice(0, i), port: Number(target.slice(i + 1)) };
    const server = options.tls
      ? tls.createServer({ key: options.tls.key, cert: options.tls.cert })
      : net.createServer();
    const proxy = new WireProxy(server, dest);
    server.on(options.tls ? "secureConnection" : "connection", (s: net.Socket) => proxy.#accept(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return proxy;
  }

  /** "127.0.0.1:port" of the proxy. */
  get address(): string {
    return `127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }

  /** The frames of connection `conn` (numbered from 1 in accept order). */
  framesOf(conn: number): WsFrame[] {
    return this.frames.items.filter((f) => f.conn === conn);
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #accept(client: net.Socket): void {
    const conn = ++this.#conns;
    const upstream = net.connect(this.#target);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.#sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    let upgraded = false;
    let raw = false;
    client.on("data", (d: Buffer) => {
      upstream.write(d);
      if (raw) return;
      pending = Buffer.concat([pending, d]);
      if (!upgraded) {
        if (
          pending.length >= 4 &&
          pending.subarray(0, 4).toString("latin1") !== "GET "
        ) {
          raw = true; // raw MQTT over TCP: nothing to record
          return;
        }
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        upgraded = true;
        this.upgrades.push(pending.subarray(0, end).toString("latin1"));
        pending = pending.subarray(end + 4);
      }
      pending = takeFrames(pending, (f) => this.frames.push({ ...f, conn }));
    });
    upstream.on("data", (d: Buffer) => client.write(d));
    const end = () => {
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on("close", end);
      s.on("error", end);
    }
  }
}
