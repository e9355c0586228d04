// MQTT inputs of the fuzz test: valid packets built with mqtt-packet, then mutated, plus packets
// crafted by hand that mqtt-packet refuses to build (packet id 0, bad lengths, bad properties).
import { Buffer } from "node:buffer";
import mqttPacket, { type Packet } from "mqtt-packet";
import { concatBytes, mutateBytes, type Rng } from "./fuzz_rng.ts";

/** One MQTT input: the bytes a client writes, in order, and what they are. */
export interface MqttInput {
  name: string;
  bytes: Uint8Array;
}

/**
 * What one connection writes: each stage once the server answered the previous one (a login
 * waits for its CONNACK), or all of it in one stage, as a pipelining client does.
 */
export interface StagedInput {
  name: string;
  stages: Uint8Array[];
  /** The first stage is a valid login: give its CONNACK time before writing the next. */
  login: boolean;
}

/** Credentials of the connection an input logs in with. */
export interface MqttLogin {
  id: string;
  password: string;
}

const enc = new TextEncoder();

/** mqtt-packet's bytes of `packet` for protocol `version`. */
export function packetBytes(packet: Packet, version: 3 | 4 | 5 = 5): Uint8Array {
  return new Uint8Array(mqttPacket.generate(packet, { protocolVersion: version }));
}

/** A valid CONNECT (Clean Start, Session Expiry 0 on MQTT 5) for `login`. */
export function connectBytes(login: MqttLogin, version: 3 | 4 | 5 = 5): Uint8Array {
  return packetBytes({
    cmd: "connect",
    protocolId: version === 3 ? "MQIsdp" : "MQTT",
    protocolVersion: version,
    clientId: login.id,
    username: login.id,
    password: Buffer.from(login.password),
    clean: true,
    keepalive: 30,
    ...(version === 5 ? { properties: { sessionExpiryInterval: 0 } } : {}),
  }, version);
}

/** A QoS 1 SUBSCRIBE of the own down topic. */
export function subscribeDownBytes(id: string, version: 3 | 4 | 5 = 5): Uint8Array {
  return packetBytes({
    cmd: "subscribe",
    messageId: 1,
    subscriptions: [{ topic: `nix/c/${id}/down`, qos: 1 }],
  }, version);
}

/** A QoS 1 PUBLISH of `payload` on the own up topic. */
export function publishUpBytes(
  id: string,
  payload: Uint8Array | string,
  messageId = 2,
  version: 3 | 4 | 5 = 5,
): Uint8Array {
  return packetBytes({
    cmd: "publish",
    topic: `nix/c/${id}/up`,
    payload: Buffer.from(payload),
    qos: 1,
    retain: false,
    dup: false,
    messageId,
  }, version);
}

function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

function str(s: string | Uint8Array): number[] {
  const b = typeof s === "string" ? enc.encode(s) : s;
  return [b.length >> 8 & 0xff, b.length & 0xff, ...b];
}

/** A fixed header with a correct remaining length around `body`. */
function framed(first: number, body: number[]): Uint8Array {
  return new Uint8Array([first, ...varint(body.length), ...body]);
}

/** Property blocks a well-behaved encoder would never write (MQTT 5, 2.2.2). */
function badProperties(rng: Rng): number[] {
  switch (rng.int(9)) {
    case 0: // unknown property id
      return [0x7f, rng.int(256)];
    case 1: // Topic Alias 0 [MQTT-3.3.2-8]
      return [0x23, 0, 0];
    case 2: // Subscription Identifier 0 [MQTT-3.3.4-6]
      return [0x0b, 0];
    case 3: // user property with invalid UTF-8
      return [0x26, ...str(new Uint8Array([0xff, 0xfe])), ...str("v")];
    case 4: // duplicate Payload Format Indicator
      return [0x01, 1, 0x01, 0];
    case 5: // Payload Format Indicator 1 with a value out of range
      return [0x01, 7];
    case 6: // property truncated in the middle
      return [0x02, 0, 0];
    case 7: // Content Type with a NUL
      return [0x03, ...str("a\u0000b")];
    default:
      return Array.from(rng.bytes(1 + rng.int(12)));
  }
}

/** Crafted packets that mqtt-packet cannot generate. */
function craftedPacket(rng: Rng, id: string, v5: boolean): MqttInput {
  const up = `nix/c/${id}/up`;
  const payload = Array.from(enc.encode('{"v":1,"type":"hello","rid":"x"}'));
  const noProps = v5 ? [0] : [];
  switch (rng.int(12)) {
    case 0:
      return {
        name: "QoS 1 PUBLISH with packet id 0",
        bytes: framed(0x32, [...str(up), 0, 0, ...noProps, ...payload]),
      };
    case 1:
      return {
        name: "PUBLISH with QoS 3",
        bytes: framed(0x36, [...str(up), 0, 5, ...noProps, ...payload]),
      };
    case 2: {
      const props = badProperties(rng);
      return {
        name: "PUBLISH with bad properties",
        bytes: framed(0x32, [...str(up), 0, 6, ...varint(props.length), ...props, ...payload]),
      };
    }
    case 3:
      return {
        name: "property length beyond the packet",
        bytes: framed(0x32, [...str(up), 0, 7, ...varint(5000), ...payload]),
      };
    case 4:
      return {
        name: "remaining length of 5 bytes",
        bytes: new Uint8Array([0x30, 0xff, 0xff, 0xff, 0xff, 0x7f]),
      };
    case 5:
      return {
        name: "remaining length 268435455 with a short body",
        bytes: new Uint8Array([0x30, 0xff, 0xff, 0xff, 0x7f, ...rng.bytes(16)]),
      };
    case 6:
      return { name: "reserved packet type 0", bytes: new Uint8Array([0x00, 0x02, 0x00, 0x00]) };
    case 7:
      return {
        name: "reserved packet type 15 (AUTH on 3.1.1)",
        bytes: new Uint8Array([0xf0, 0x00]),
      };
    case 8:
      return {
        name: "SUBSCRIBE with flags 0",
        bytes: framed(0x80, [0, 9, ...noProps, ...str(`nix/c/${id}/down`), 1]),
      };
    case 9:
      return {
        name: "SUBSCRIBE with no topics",
        bytes: framed(0x82, [0, 9, ...noProps]),
      };
    case 10:
      return {
        name: "PUBLISH with a topic holding a NUL",
        bytes: framed(0x30, [...str(`nix/c/${id}/up\u0000`), ...noProps, ...payload]),
      };
    default:
      return {
        name: "random packet type and flags",
        bytes: framed(rng.int(256), Array.from(rng.bytes(rng.int(40)))),
      };
  }
}

const TOPICS = ["#", "+/+", "nix/#", "nix/c/+/down", "$SYS/#", "", "a/b", "nix/c/x/up"];

/** A valid packet of a random type, as a client might send it after CONNECT. */
function validPacket(rng: Rng, id: string, version: 3 | 4 | 5): Packet {
  const v5 = version === 5;
  const topic = rng.pick([`nix/c/${id}/up`, `nix/c/${id}/down`, ...TOPICS.filter((t) => t)]);
  const messageId = 1 + rng.int(65535);
  const reasonCode = rng.pick([0, 0x10, 0x80, 0x83, 0x87, 0x8e, 0x97]);
  const payload = Buffer.from(
    rng.pick([
      '{"v":1,"type":"hello","rid":"h"}',
      '{"v":1,"type":"send","rid":"s","id":"m1","to":{"kind":"endpoint","id":"nobody"},"body":{"enc":"utf8","data":"x"}}',
      "not json",
      "",
    ]),
  );
  switch (rng.int(13)) {
    case 0:
    case 1:
      return {
        cmd: "publish",
        topic,
        payload,
        qos: rng.pick([0, 1, 2] as const),
        retain: rng.chance(0.2),
        dup: rng.chance(0.2),
        messageId,
        ...(v5 && rng.chance(0.5)
          ? {
            properties: {
              payloadFormatIndicator: rng.chance(0.5),
              messageExpiryInterval: rng.int(100),
              contentType: "application/json",
              responseTopic: `nix/c/${id}/down`,
              correlationData: Buffer.from("c"),
              userProperties: { k: "v" },
              ...(rng.chance(0.3) ? { topicAlias: 1 + rng.int(10) } : {}),
            },
          }
          : {}),
      };
    case 2:
      return {
        cmd: "subscribe",
        messageId,
        subscriptions: [{
          topic: rng.pick([`nix/c/${id}/down`, ...TOPICS.filter((t) => t)]),
          qos: rng.pick([0, 1, 2] as const),
          ...(v5 ? { nl: rng.chance(0.5), rap: rng.chance(0.5), rh: rng.int(3) } : {}),
        }],
        ...(v5 && rng.chance(0.3)
          ? { properties: { subscriptionIdentifier: 1 + rng.int(5) } }
          : {}),
      };
    case 3:
      return {
        cmd: "unsubscribe",
        messageId,
        unsubscriptions: [rng.pick(TOPICS.filter((t) => t))],
      };
    case 4:
      return { cmd: rng.pick(["puback", "pubrec", "pubcomp"] as const), messageId, reasonCode };
    case 5:
      return { cmd: "pubrel", messageId, reasonCode: rng.pick([0, 0x92]) };
    case 6:
      return { cmd: "pingreq" };
    case 7:
      return {
        cmd: "disconnect",
        reasonCode,
        ...(v5
          ? { properties: { sessionExpiryInterval: rng.pick([0, 60]), reasonString: "x" } }
          : {}),
      };
    case 8:
      return v5
        ? {
          cmd: "auth",
          reasonCode: rng.pick([0, 0x18, 0x19]),
          properties: { authenticationMethod: "x" },
        }
        : { cmd: "pingresp" };
    case 9:
      return { cmd: "connack", returnCode: 0, reasonCode: 0, sessionPresent: false };
    case 10:
      return { cmd: "suback", messageId, granted: [0] };
    case 11:
      return {
        cmd: "connect",
        clientId: id,
        protocolVersion: version,
        protocolId: version === 3 ? "MQIsdp" : "MQTT",
        clean: true,
        keepalive: 30,
      };
    default:
      return { cmd: "unsuback", messageId, granted: [0x11] } as unknown as Packet;
  }
}

function mutatedConnect(rng: Rng, login: MqttLogin): MqttInput {
  const version = rng.pick([3, 4, 5] as const);
  const v5 = version === 5;
  const packet: Packet = {
    cmd: "connect",
    protocolId: version === 3 ? "MQIsdp" : "MQTT",
    protocolVersion: version,
    clientId: rng.pick([login.id, "", "x".repeat(300), "中文"]),
    clean: rng.chance(0.8),
    keepalive: rng.pick([0, 1, 30, 65535]),
    // mqtt-packet writes no password without a user name; a mutation may clear the flag.
    ...(rng.chance(0.9)
      ? {
        username: rng.pick([login.id, "", "nobody"]),
        ...(rng.chance(0.9)
          ? { password: Buffer.from(rng.pick([login.password, "nst_x", ""])) }
          : {}),
      }
      : {}),
    ...(rng.chance(0.3)
      ? {
        will: {
          topic: rng.pick([`nix/c/${login.id}/up`, "a/b"]),
          payload: Buffer.from("w"),
          qos: rng.pick([0, 1, 2] as const),
          retain: rng.chance(0.5),
          ...(v5 ? { properties: { willDelayInterval: 5, contentType: "x" } } : {}),
        },
      }
      : {}),
    ...(v5
      ? {
        properties: {
          sessionExpiryInterval: rng.pick([0, 60, 4294967295]),
          receiveMaximum: rng.pick([1, 65535]),
          maximumPacketSize: rng.pick([1, 20, 1024, 268435455]),
          topicAliasMaximum: rng.pick([0, 10]),
          requestResponseInformation: rng.chance(0.5),
          requestProblemInformation: rng.chance(0.5),
          userProperties: { a: "b" },
          ...(rng.chance(0.3)
            ? { authenticationMethod: "SCRAM", authenticationData: Buffer.from("d") }
            : {}),
        },
      }
      : {}),
  };
  let bytes: Uint8Array;
  try {
    bytes = packetBytes(packet, version);
  } catch {
    // mqtt-packet refuses some CONNECTs (an empty ClientID on 3.1 or without Clean Start); a
    // mutation can still make them.
    bytes = packetBytes({ ...packet, clientId: login.id, clean: true }, version);
  }
  return rng.chance(0.7)
    ? { name: `mutated MQTT ${version} CONNECT`, bytes: mutateBytes(rng, bytes) }
    : { name: `odd MQTT ${version} CONNECT`, bytes };
}

/**
 * An input for a connection that has not logged in: a mutated or odd CONNECT, maybe followed by
 * more packets. `login` should be an endpoint used for nothing else: mutated passwords lock it.
 */
export function preAuthInput(rng: Rng, login: MqttLogin): StagedInput {
  if (rng.chance(0.15)) {
    return {
      name: "random bytes after 0x10",
      stages: [concatBytes([new Uint8Array([0x10]), rng.bytes(rng.size(300))])],
      login: false,
    };
  }
  const first = mutatedConnect(rng, login);
  if (!rng.chance(0.4)) return { name: first.name, stages: [first.bytes], login: false };
  const more = postAuthPackets(rng, login.id, 5, 1 + rng.int(3));
  return staged(rng, first, more, false);
}

/** `first` then `more`, in two stages, or (one time in four) pipelined in one. */
function staged(rng: Rng, first: MqttInput, more: MqttInput, login: boolean): StagedInput {
  return rng.chance(0.25)
    ? {
      name: `${first.name}, pipelined ${more.name}`,
      stages: [concatBytes([first.bytes, more.bytes])],
      login,
    }
    : { name: `${first.name}, then ${more.name}`, stages: [first.bytes, more.bytes], login };
}

/** `count` packets after a CONNECT: valid, mutated, crafted, hello or random bytes. */
export function postAuthPackets(
  rng: Rng,
  id: string,
  version: 3 | 4 | 5,
  count: number,
): MqttInput {
  const names: string[] = [];
  const parts: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const kind = rng.int(10);
    if (kind < 2) {
      names.push("subscribe down");
      parts.push(subscribeDownBytes(id, version));
    } else if (kind < 3) {
      names.push("hello");
      parts.push(publishUpBytes(id, `{"v":1,"type":"hello","rid":"h${i}"}`, 10 + i, version));
    } else if (kind < 5) {
      const p = validPacket(rng, id, version);
      names.push(p.cmd);
      parts.push(packetBytes(p, version === 5 || p.cmd !== "auth" ? version : 5));
    } else if (kind < 8) {
      const p = validPacket(rng, id, version);
      names.push(`mutated ${p.cmd}`);
      parts.push(mutateBytes(rng, packetBytes(p, version === 5 || p.cmd !== "auth" ? version : 5)));
    } else if (kind < 9) {
      const c = craftedPacket(rng, id, version === 5);
      names.push(c.name);
      parts.push(c.bytes);
    } else {
      names.push("random bytes");
      parts.push(rng.bytes(rng.size(200)));
    }
  }
  return { name: names.join(", "), bytes: concatBytes(parts) };
}

/** A valid login followed by 1-5 fuzzed packets. */
export function postAuthInput(rng: Rng, login: MqttLogin): StagedInput {
  const version = rng.pick([4, 5, 5, 5] as const);
  const rest = postAuthPackets(rng, login.id, version, 1 + rng.int(5));
  const connect = { name: `MQTT ${version} login`, bytes: connectBytes(login, version) };
  return staged(rng, connect, rest, true);
}
