// WebSocket inputs of the fuzz test: upgrade requests (with and without the `mqtt` subprotocol)
// and frames written by hand (RFC 6455 5.2), so they can break every rule a real client keeps.
import { Buffer } from "node:buffer";
import { concatBytes, type Rng } from "./fuzz_rng.ts";
import { connectBytes, type MqttLogin, postAuthPackets, preAuthInput } from "./fuzz_mqtt.ts";

/**
 * One WebSocket input: the upgrade request, then groups of frames, each written once the server
 * answered the one before; or everything in one stage (a pipelining client).
 */
export interface WsInput {
  name: string;
  stages: Uint8Array[][];
  /** A stage is a valid login: give its CONNACK time before writing the next. */
  login: boolean;
}

const enc = new TextEncoder();

/** Options of one hand-made frame. */
export interface FrameSpec {
  opcode: number;
  payload: Uint8Array;
  fin?: boolean;
  /** RSV1-3 as bits 0b100, 0b010, 0b001. */
  rsv?: number;
  /** Masked with a random key (default true; clients must mask, RFC 6455 5.3). */
  masked?: boolean;
  /** Force the 16- or 64-bit length form even when shorter would do. */
  lengthForm?: 7 | 16 | 64;
  /** Announce this length instead of the real one. */
  claimedLength?: number;
}

/** Encodes one WebSocket frame from a client. */
export function wsFrame(rng: Rng, f: FrameSpec): Uint8Array {
  const len = f.claimedLength ?? f.payload.length;
  const form = f.lengthForm ?? (len < 126 ? 7 : len < 65536 ? 16 : 64);
  const masked = f.masked ?? true;
  const head: number[] = [((f.fin ?? true) ? 0x80 : 0) | ((f.rsv ?? 0) << 4) | (f.opcode & 0x0f)];
  const maskBit = masked ? 0x80 : 0;
  if (form === 7) head.push(maskBit | (len & 0x7f));
  else if (form === 16) head.push(maskBit | 126, len >> 8 & 0xff, len & 0xff);
  else {
    head.push(maskBit | 127);
    const big = Buffer.alloc(8);
    big.writeBigUInt64BE(BigInt(len));
    head.push(...big);
  }
  if (!masked) return concatBytes([new Uint8Array(head), f.payload]);
  const key = rng.bytes(4);
  const body = f.payload.map((b, i) => b ^ key[i % 4]);
  return concatBytes([new Uint8Array(head), key, body]);
}

/** An upgrade request to `path`; `protocols` null leaves out Sec-WebSocket-Protocol. */
export function upgradeRequest(
  rng: Rng,
  opts: { path?: string; protocols?: string | null; extra?: string[]; version?: string } = {},
): Uint8Array {
  const lines = [
    `GET ${opts.path ?? "/mqtt"} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${Buffer.from(rng.bytes(16)).toString("base64")}`,
    `Sec-WebSocket-Version: ${opts.version ?? "13"}`,
    ...(opts.protocols === null ? [] : [`Sec-WebSocket-Protocol: ${opts.protocols ?? "mqtt"}`]),
    ...(opts.extra ?? []),
  ];
  return enc.encode(lines.join("\r\n") + "\r\n\r\n");
}

const CLOSE_CODES = [
  1000,
  1001,
  1002,
  1003,
  1004,
  1005,
  1006,
  1015,
  999,
  0,
  2999,
  3000,
  4999,
  5000,
  65535,
];

function closePayload(rng: Rng): Uint8Array {
  const kind = rng.int(5);
  if (kind === 0) return new Uint8Array();
  if (kind === 1) return new Uint8Array([0x03]); // a 1-byte close body is invalid
  const code = rng.pick(CLOSE_CODES);
  const reason = kind === 2 ? new Uint8Array([0xc3, 0x28]) : enc.encode("bye".repeat(rng.int(50)));
  return concatBytes([new Uint8Array([code >> 8, code & 0xff]), reason]);
}

/** One frame that breaks a rule, with its name. */
function badFrame(rng: Rng): { name: string; bytes: Uint8Array } {
  const payload = rng.bytes(rng.size(64));
  switch (rng.int(14)) {
    case 0:
      return {
        name: "unmasked binary",
        bytes: wsFrame(rng, { opcode: 2, payload, masked: false }),
      };
    case 1:
      return {
        name: "unmasked close",
        bytes: wsFrame(rng, { opcode: 8, payload: closePayload(rng), masked: false }),
      };
    case 2: {
      const opcode = rng.pick([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]);
      return { name: `opcode ${opcode}`, bytes: wsFrame(rng, { opcode, payload }) };
    }
    case 3:
      return {
        name: "close with odd code",
        bytes: wsFrame(rng, { opcode: 8, payload: closePayload(rng) }),
      };
    case 4:
      return {
        name: "ping of 126 bytes",
        bytes: wsFrame(rng, { opcode: 9, payload: rng.bytes(126) }),
      };
    case 5:
      return { name: "fragmented ping", bytes: wsFrame(rng, { opcode: 9, payload, fin: false }) };
    case 6:
      return { name: "continuation without a start", bytes: wsFrame(rng, { opcode: 0, payload }) };
    case 7:
      return {
        name: "binary start then a new binary",
        bytes: concatBytes([
          wsFrame(rng, { opcode: 2, payload, fin: false }),
          wsFrame(rng, { opcode: 2, payload }),
        ]),
      };
    case 8:
      return { name: "RSV bits", bytes: wsFrame(rng, { opcode: 2, payload, rsv: 1 + rng.int(7) }) };
    case 9:
      return {
        name: "64-bit length with the top bit",
        bytes: wsFrame(rng, { opcode: 2, payload, lengthForm: 64, claimedLength: 2 ** 53 }),
      };
    case 10:
      return {
        name: "length beyond maxPayload",
        bytes: wsFrame(rng, { opcode: 2, payload, claimedLength: 64 * 1024 * 1024 }),
      };
    case 11:
      return {
        name: "text with invalid UTF-8",
        bytes: wsFrame(rng, { opcode: 1, payload: new Uint8Array([0xff, 0xfe, 0x80]) }),
      };
    case 12:
      return {
        name: "text frame",
        bytes: wsFrame(rng, { opcode: 1, payload: enc.encode("hello") }),
      };
    default:
      return { name: "random bytes", bytes: rng.bytes(1 + rng.size(64)) };
  }
}

/** MQTT bytes cut into masked binary frames at random points, some fragmented. */
function mqttFrames(rng: Rng, bytes: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    const n = rng.chance(0.6) ? bytes.length - at : 1 + rng.int(bytes.length - at);
    const piece = bytes.subarray(at, at + n);
    if (rng.chance(0.15) && piece.length > 1) {
      const cut = 1 + rng.int(piece.length - 1);
      frames.push(wsFrame(rng, { opcode: 2, payload: piece.subarray(0, cut), fin: false }));
      if (rng.chance(0.5)) frames.push(wsFrame(rng, { opcode: 9, payload: enc.encode("p") }));
      frames.push(wsFrame(rng, { opcode: 0, payload: piece.subarray(cut) }));
    } else {
      frames.push(wsFrame(rng, { opcode: 2, payload: piece }));
    }
    at += n;
  }
  return frames;
}

const ODD_UPGRADES: ReadonlyArray<[string, (rng: Rng) => Uint8Array]> = [
  ["subprotocol mqttv3.1 only", (rng) => upgradeRequest(rng, { protocols: "mqttv3.1" })],
  ["subprotocols mqtt and others", (rng) => upgradeRequest(rng, { protocols: "foo, mqtt ,bar" })],
  ["empty subprotocol", (rng) => upgradeRequest(rng, { protocols: "" })],
  ["bad subprotocol token", (rng) => upgradeRequest(rng, { protocols: "mq tt,," })],
  ["version 8", (rng) => upgradeRequest(rng, { version: "8" })],
  ["bad key", (rng) => upgradeRequest(rng, { extra: ["Sec-WebSocket-Key: x"] })],
  ["path /mqtt/", (rng) => upgradeRequest(rng, { path: "/mqtt/" })],
  ["path /mqtt?x=%zz", (rng) => upgradeRequest(rng, { path: "/mqtt?x=%zz" })],
  ["path /healthz", (rng) => upgradeRequest(rng, { path: "/healthz" })],
  [
    "deflate offered",
    (rng) => upgradeRequest(rng, { extra: ["Sec-WebSocket-Extensions: permessage-deflate; x=1"] }),
  ],
  ["huge header", (rng) => upgradeRequest(rng, { extra: [`X-Big: ${"a".repeat(70_000)}`] })],
  [
    "POST upgrade",
    (rng) => enc.encode(new TextDecoder().decode(upgradeRequest(rng)).replace("GET", "POST")),
  ],
];

/**
 * A WebSocket input: mostly a proper upgrade followed by MQTT (fuzzed after a valid login, or a
 * fuzzed CONNECT) mixed with broken frames; sometimes an upgrade without `mqtt` or an odd one.
 * `login` is the endpoint of valid logins, `preLogin` the one of fuzzed CONNECTs.
 */
export function wsInput(rng: Rng, login: MqttLogin, preLogin: MqttLogin): WsInput {
  const roll = rng.float();
  let upgradeName = "upgrade with mqtt";
  let upgrade: Uint8Array;
  if (roll < 0.6) upgrade = upgradeRequest(rng);
  else if (roll < 0.85) {
    upgradeName = "upgrade without a subprotocol";
    upgrade = upgradeRequest(rng, { protocols: null });
  } else {
    const [name, make] = rng.pick(ODD_UPGRADES);
    upgradeName = `upgrade: ${name}`;
    upgrade = make(rng);
  }
  const names: string[] = [];
  const stages: Uint8Array[][] = [[upgrade]];
  const mode = rng.int(3);
  if (mode === 0) {
    const version = rng.pick([4, 5] as const);
    const rest = postAuthPackets(rng, login.id, version, 1 + rng.int(4));
    names.push(`MQTT ${version} login, then ${rest.name}`);
    stages.push(mqttFrames(rng, connectBytes(login, version)), mqttFrames(rng, rest.bytes));
  } else if (mode === 1) {
    const pre = preAuthInput(rng, preLogin);
    names.push(pre.name);
    stages.push(...pre.stages.map((b) => mqttFrames(rng, b)));
  } else {
    stages.push([]);
  }
  const bad = mode === 2 ? 1 + rng.int(3) : rng.int(2);
  for (let i = 0; i < bad; i++) {
    const f = badFrame(rng);
    names.push(f.name);
    const into = stages[1 + rng.int(stages.length - 1)];
    into.splice(rng.int(into.length + 1), 0, f.bytes);
  }
  const pipelined = rng.chance(0.15);
  return {
    name: `${upgradeName}: ${names.join(", ") || "no frames"}${pipelined ? ", pipelined" : ""}`,
    stages: pipelined ? [stages.flat()] : stages,
    login: mode === 0,
  };
}
