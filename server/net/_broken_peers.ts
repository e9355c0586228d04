/**
 * Broken peers for the robustness tests (issue 10 item 1): each one connects to a listener over
 * loopback, misbehaves, and resolves once the server has closed the connection (or the peer
 * has reset it). None may take the process down.
 */
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { closeOf, connectTcp, within } from "./_test_util.ts";

/** One misbehaving peer against `port`. */
export interface BrokenPeer {
  readonly name: string;
  /** True when the listener must have a certificate for this peer to reach its target. */
  readonly needsTls?: boolean;
  /** True when only a real broker closes this peer (the harness does not parse MQTT). */
  readonly needsBroker?: boolean;
  run(port: number): Promise<void>;
}

/** A WebSocket frame; `mask` false sends it unmasked, which a server must refuse (RFC 6455 5.1). */
export function wsFrame(
  opcode: number,
  payload: Uint8Array,
  o: { mask?: boolean; rsv?: number } = {},
) {
  const mask = o.mask ?? true;
  const head = [0x80 | ((o.rsv ?? 0) << 4) | opcode];
  const len = payload.length;
  if (len < 126) head.push((mask ? 0x80 : 0) | len);
  else head.push((mask ? 0x80 : 0) | 126, len >> 8, len & 0xff);
  if (!mask) return Buffer.concat([Buffer.from(head), payload]);
  const key = randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ key[i % 4]));
  return Buffer.concat([Buffer.from(head), key, body]);
}

/** A close frame payload with `code` (RFC 6455 5.5.1). */
function closePayload(code: number): Buffer {
  return Buffer.from([code >> 8, code & 0xff]);
}

/** A real TLS ClientHello, as node:tls sends it, captured by a local listener. */
async function recordClientHello(): Promise<Buffer> {
  const server = createServer();
  const first = new Promise<Buffer>((resolve) => {
    server.once("connection", (s: Socket) => {
      s.once("data", (c: Buffer) => {
        resolve(c);
        s.destroy();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const tls = tlsConnect({
    port: (server.address() as AddressInfo).port,
    host: "127.0.0.1",
    rejectUnauthorized: false,
  });
  tls.on("error", () => {});
  try {
    return await within(first, "a ClientHello");
  } finally {
    tls.destroy();
    await new Promise((r) => server.close(r));
  }
}

/** Upgrades a raw socket on `/mqtt`; resolves after the 101 response with any bytes after it. */
export async function rawUpgrade(
  port: number,
  protocol: string | null,
  host = "127.0.0.1",
): Promise<{ socket: Socket; rest: Buffer }> {
  const socket = await connectTcp(port, host);
  socket.on("error", () => {});
  const lines = [
    "GET /mqtt HTTP/1.1",
    `Host: ${host}:${port}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
    "Sec-WebSocket-Version: 13",
  ];
  if (protocol !== null) lines.push(`Sec-WebSocket-Protocol: ${protocol}`);
  socket.write(lines.join("\r\n") + "\r\n\r\n");
  const answer = new Promise<Buffer>((resolve, reject) => {
    let got = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      got = Buffer.concat([got, c]);
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.pause();
      const head = got.subarray(0, end).toString("latin1");
      if (!head.startsWith("HTTP/1.1 101")) reject(new Error(`Upgrade refused: ${head}`));
      else resolve(got.subarray(end + 4));
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error("Closed during the upgrade")));
  });
  const rest = await within(answer, "the 101 response");
  return { socket, rest };
}

/** Upgrades, sends `frames` and waits for the server to close the connection. */
function wsPeer(name: string, protocol: string | null, frames: () => Buffer[]): BrokenPeer {
  return {
    name,
    async run(port) {
      const { socket } = await rawUpgrade(port, protocol);
      const closed = closeOf(socket);
      socket.resume();
      for (const f of frames()) socket.write(f);
      await closed;
    },
  };
}

/** Sends `bytes` on a plain TCP connection, then half-closes or resets it. */
function tcpPeer(name: string, bytes: () => Buffer, end: "end" | "reset" | "wait"): BrokenPeer {
  return {
    name,
    async run(port) {
      const socket = await connectTcp(port);
      const closed = closeOf(socket);
      socket.write(bytes());
      if (end === "reset") socket.resetAndDestroy();
      else if (end === "end") socket.end();
      await closed;
    },
  };
}

/** A CONNECT whose remaining length is longer than MQTT allows. */
const GARBAGE_MQTT = [0x10, 0xff, 0xff, 0xff, 0xff, 0x7f];

const UPGRADE_HEAD =
  "GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
  "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\nSec-WebSocket-Key: ";

/** Every kind of broken peer the listener must survive. */
export const BROKEN_PEERS: readonly BrokenPeer[] = [
  // The reported crash: paho answers the 1002 close with an unmasked close frame.
  wsPeer("no subprotocol, then an unmasked close", null, () => [
    wsFrame(0x8, closePayload(1002), { mask: false }),
  ]),
  wsPeer("no subprotocol, then a close with code 1005", null, () => [
    wsFrame(0x8, closePayload(1005)),
  ]),
  wsPeer("mqtt, then an unmasked binary frame", "mqtt", () => [
    wsFrame(0x2, Buffer.from([0x10, 0x00]), { mask: false }),
  ]),
  wsPeer("mqtt, then a close with code 1005", "mqtt", () => [wsFrame(0x8, closePayload(1005))]),
  wsPeer("mqtt, then a reserved opcode", "mqtt", () => [wsFrame(0x3, Buffer.from([1, 2]))]),
  wsPeer("mqtt, then RSV1 without an extension", "mqtt", () => [
    wsFrame(0x2, Buffer.from([0x10, 0x00]), { rsv: 4 }),
  ]),
  wsPeer("mqtt, then a frame over the payload cap", "mqtt", () => [
    Buffer.from([0x82, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4]),
  ]),
  {
    ...wsPeer("mqtt, then a text frame", "mqtt", () => [wsFrame(0x1, Buffer.from("x"))]),
    needsBroker: true,
  },
  {
    ...wsPeer("mqtt, then garbage MQTT", "mqtt", () => [wsFrame(0x2, Buffer.from(GARBAGE_MQTT))]),
    needsBroker: true,
  },
  tcpPeer("half-sent HTTP request", () => Buffer.from("GET /healthz HTTP/1.1\r\nHo"), "end"),
  tcpPeer(
    "malformed HTTP request",
    () => Buffer.from("GET / HTTP/1.1\r\n\x00\x01\x02\r\n\r\n"),
    "wait",
  ),
  tcpPeer("reset in the middle of an upgrade", () => Buffer.from(UPGRADE_HEAD + "AAAA"), "reset"),
  tcpPeer(
    "reset right after a complete upgrade request",
    () => Buffer.from(UPGRADE_HEAD + randomBytes(16).toString("base64") + "\r\n\r\n"),
    "reset",
  ),
  {
    ...tcpPeer("garbage MQTT over TCP", () => Buffer.from(GARBAGE_MQTT), "wait"),
    needsBroker: true,
  },
  tcpPeer(
    "reset after a partial MQTT CONNECT",
    () => Buffer.from([0x10, 0x20, 0x00, 0x04]),
    "reset",
  ),
  {
    name: "TLS record header followed by garbage",
    needsTls: true,
    async run(port) {
      const socket = await connectTcp(port);
      const closed = closeOf(socket);
      socket.write(Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x00, 0x40]), randomBytes(64)]));
      await closed;
    },
  },
  {
    name: "TLS reset in the middle of the handshake",
    needsTls: true,
    async run(port) {
      const hello = await recordClientHello();
      const socket = await connectTcp(port);
      const closed = closeOf(socket);
      const serverHello = new Promise((r) => socket.once("data", r));
      socket.write(hello);
      await within(serverHello, "the ServerHello");
      socket.resetAndDestroy();
      await closed;
    },
  },
  {
    name: "TLS session, then garbage records",
    needsTls: true,
    async run(port) {
      const socket = await connectTcp(port);
      const closed = closeOf(socket);
      const tls = tlsConnect({ socket, rejectUnauthorized: false, servername: "localhost" });
      tls.on("error", () => {});
      await within(new Promise((r) => tls.once("secureConnect", r)), "the TLS handshake");
      await new Promise((r) => tls.write("GET /mqtt HTTP/1.1\r\nHost: x\r\n", r));
      // A record that does not decrypt: the server answers with a fatal alert. (Deno's server
      // side then leaves the TCP connection to the HTTP deadlines, so wait for the alert only.)
      const alert = new Promise((r) => tls.once("error", r));
      socket.write(Buffer.from([0x17, 0x03, 0x03, 0x00, 0x20, ...randomBytes(32)]));
      await within(alert, "the fatal alert");
      socket.destroy();
      await closed;
    },
  },
];
