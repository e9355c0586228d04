import { Buffer } from "node:buffer";
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
    if (opts?.protocolVersion === 5) {
      const extras = extrasByStream.get(stream);
      if (extras) amend(packet, extras);
    }
    return write(packet, stream, opts);
  };
  // Keep `cacheNumbers` and any other statics reachable through the wrapper.
  Object.setPrototypeOf(patched, write);
  codec.writeToStream = patched;
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

/** Encode one PUBLISH into a single buffer, so it leaves as one write (one WebSocket frame). */
export function encodePublish(
  topic: string,
  payload: Uint8Array,
  qos: 0 | 1,
  messageId: number | undefined,
  protocolVersion: number,
): Buffer {
  const body = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const packet = {
    cmd: "publish",
    topic,
    payload: body,
    qos,
    messageId,
    retain: false,
    dup: false,
  };
  // deno-lint-ignore no-explicit-any
  return (mqttPacket as any).generate(packet, { protocolVersion });
}
