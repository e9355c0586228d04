import { Buffer } from "node:buffer";
import process from "node:process";
// The very module instance aedes writes with (aedes 2.0.0-beta.1 depends on mqtt-packet ^9.0.2,
// locked at 9.0.2). Move it to a bare specifier once deno.json `imports` lists it.
import mqttPacket from "mqtt-packet";

/** What to add to the CONNACK written on one stream (its refusals are obscured too). */
export interface ConnackExtras {
  /** Merged into the properties of a successful MQTT 5 CONNACK. */
  properties?: Record<string, unknown>;
  /** Replaces the reason code of a failed MQTT 5 CONNACK (e.g. 0x88 -> 0x89 server busy). */
  failureReasonCode?: number;
}

const extrasByStream = new WeakMap<object, ConnackExtras>();
let installed = false;

/**
 * Let the broker adapter amend the CONNACK aedes writes on `stream`, and obscure "not authorized"
 * in its SUBACKs and PUBACKs (MQTT 5).
 *
 * aedes builds the MQTT 5 CONNACK properties itself and offers no hook to add Maximum QoS,
 * Retain Available or Wildcard Subscription Available (spec 5), nor to answer 0x89 "server
 * busy". We wrap mqtt-packet's `writeToStream`, which aedes looks up on every write, and touch
 * only packets written to streams registered here. MQTT.js shares the module and is unaffected.
 */
export function setConnackExtras(stream: object, extras: ConnackExtras): void {
  install();
  extrasByStream.set(stream, extras);
}

function install(): void {
  if (installed) return;
  installed = true;
  // deno-lint-ignore no-explicit-any
  const codec = mqttPacket as any;
  const write = codec.writeToStream;
  // deno-lint-ignore no-explicit-any
  const patched = (packet: any, stream: any, opts: any): boolean => {
    const extras = extrasByStream.get(stream);
    if (extras === undefined) return write(packet, stream, opts);
    const version = opts?.protocolVersion ?? 4;
    if (version === 5) amend(packet, extras);
    // aedes acknowledges every QoS 1 PUBLISH: write those PUBACKs in one piece.
    const ack = packet.cmd === "puback" && packet.properties === undefined
      ? encodePuback(packet.messageId, packet.reasonCode, version)
      : null;
    if (ack === null) return write(packet, stream, opts);
    // Like mqtt-packet: what is written in this tick leaves together.
    stream.cork();
    process.nextTick(() => stream.uncork());
    return stream.write(ack);
  };
  // Keep `cacheNumbers` and any other statics reachable through the wrapper.
  Object.setPrototypeOf(patched, write);
  codec.writeToStream = patched;
}

/**
 * The bytes mqtt-packet 9 writes for a PUBACK without properties, built in one buffer; null for
 * anything it would reject (a bad packet id or reason code), which then takes its own path.
 * MQTT 5 omits the reason code only when it is 0 (§3.4.2.1); an absent one is written as 0 with
 * an empty property block.
 */
export function encodePuback(
  messageId: unknown,
  reasonCode: unknown,
  protocolVersion: number,
): Buffer | null {
  if (typeof messageId !== "number" || !Number.isInteger(messageId)) return null;
  if (messageId < 0 || messageId > 0xffff) return null;
  const short = protocolVersion !== 5 || reasonCode === 0;
  if (!short && reasonCode !== undefined) {
    if (typeof reasonCode !== "number" || !Number.isInteger(reasonCode)) return null;
    if (reasonCode < 0 || reasonCode > 0xff) return null;
  }
  const out = Buffer.allocUnsafe(short ? 4 : 6);
  out[0] = 0x40;
  out[1] = short ? 2 : 4;
  out[2] = messageId >> 8;
  out[3] = messageId & 0xff;
  if (!short) {
    out[4] = (reasonCode as number | undefined) ?? 0;
    out[5] = 0;
  }
  return out;
}

/** MQTT 5 reason codes: "Not authorized", and the "Unspecified error" that stands in for it. */
const NOT_AUTHORIZED = 0x87;
const UNSPECIFIED_ERROR = 0x80;

// deno-lint-ignore no-explicit-any
function amend(packet: any, extras: ConnackExtras): void {
  switch (packet.cmd) {
    case "connack":
      if (packet.reasonCode === 0) {
        packet.properties = { ...packet.properties, ...extras.properties };
      } else if (extras.failureReasonCode !== undefined) {
        packet.reasonCode = extras.failureReasonCode;
      }
      break;
    // Spec 5 Compatibilities.ObscureNotAuthorized: a refused topic is not confirmed as "not
    // authorized" (0x87) but reported as an unspecified error (0x80), without a reason string.
    case "suback":
      packet.granted = packet.granted.map((g: number) =>
        g === NOT_AUTHORIZED ? UNSPECIFIED_ERROR : g
      );
      break;
    case "puback":
      if (packet.reasonCode === NOT_AUTHORIZED) {
        packet.reasonCode = UNSPECIFIED_ERROR;
        packet.properties = undefined;
      }
      break;
  }
}

/** The bytes a PUBLISH occupies on the wire (MQTT 5 with an empty property block). */
export function publishWireSize(
  topicBytes: number,
  payloadBytes: number,
  qos: 0 | 1,
  protocolVersion: number,
): number {
  const remaining = 2 + topicBytes + (qos ? 2 : 0) + (protocolVersion === 5 ? 1 : 0) +
    payloadBytes;
  const lengthBytes = remaining < 128 ? 1 : remaining < 16384 ? 2 : remaining < 2097152 ? 3 : 4;
  return 1 + lengthBytes + remaining;
}

/** Encode an MQTT 5 DISCONNECT with `reasonCode`. */
export function encodeDisconnect(reasonCode: number): Buffer {
  // deno-lint-ignore no-explicit-any
  return (mqttPacket as any).generate({ cmd: "disconnect", reasonCode }, { protocolVersion: 5 });
}

/** The largest Remaining Length MQTT can express (§1.5.5): 268,435,455 bytes. */
const MAX_REMAINING = 268_435_455;

/**
 * Encode one PUBLISH (no properties, no DUP, no RETAIN) into a single buffer, so it leaves as one
 * write (one WebSocket frame). The bytes are the ones mqtt-packet's `generate` gives for the same
 * packet (`codec_test.ts`), written directly: `generate` assembles them from pieces.
 */
export function encodePublish(
  topic: Uint8Array,
  payload: Uint8Array,
  qos: 0 | 1,
  messageId: number | undefined,
  protocolVersion: number,
): Buffer {
  const remaining = 2 + topic.byteLength + (qos ? 2 : 0) + (protocolVersion === 5 ? 1 : 0) +
    payload.byteLength;
  if (remaining > MAX_REMAINING) throw new RangeError("PUBLISH too large for MQTT");
  if (topic.byteLength > 0xffff) throw new RangeError("Topic too long for MQTT");
  if (qos === 1 && (messageId === undefined || messageId < 1 || messageId > 0xffff)) {
    throw new RangeError("A QoS 1 PUBLISH needs a packet id from 1 to 65535");
  }
  const out = Buffer.allocUnsafe(
    publishWireSize(topic.byteLength, payload.byteLength, qos, protocolVersion),
  );
  let o = 0;
  out[o++] = 0x30 | (qos << 1);
  let n = remaining;
  do {
    const digit = n % 128;
    n = Math.floor(n / 128);
    out[o++] = n > 0 ? digit | 0x80 : digit;
  } while (n > 0);
  out[o++] = topic.byteLength >> 8;
  out[o++] = topic.byteLength & 0xff;
  out.set(topic, o);
  o += topic.byteLength;
  if (qos === 1) {
    out[o++] = messageId! >> 8;
    out[o++] = messageId! & 0xff;
  }
  if (protocolVersion === 5) out[o++] = 0; // property length
  out.set(payload, o);
  return out;
}
