import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Writable } from "node:stream";
import mqttPacket from "mqtt-packet";
import { encodePuback, encodePublish, publishWireSize, setConnackExtras } from "./codec.ts";

// deno-lint-ignore no-explicit-any
const codec = mqttPacket as any;

/** What mqtt-packet itself writes for `packet`. */
function reference(packet: Record<string, unknown>, protocolVersion: number): Uint8Array {
  return new Uint8Array(codec.generate(packet, { protocolVersion }));
}

/** A stream that keeps every byte written to it. */
function sink(): { stream: Writable; bytes: () => Uint8Array } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  });
  return { stream, bytes: () => new Uint8Array(Buffer.concat(chunks)) };
}

Deno.test("encodePublish gives mqtt-packet's bytes for every length-field size", () => {
  const topic = "nix/c/device-1/down";
  const topicBytes = new TextEncoder().encode(topic);
  // Remaining Length takes 1, 2 and 3 bytes around 127/128 and 16383/16384.
  const sizes = [0, 1, 100, 102, 103, 104, 1024, 16_350, 16_360, 16_380, 70_000];
  for (const version of [4, 5]) {
    for (const qos of [0, 1] as const) {
      for (const size of sizes) {
        const payload = new Uint8Array(size).map((_, i) => (i * 7) & 0xff);
        const messageId = qos === 1 ? 1 + (size % 65535) : undefined;
        const ours = encodePublish(topicBytes, payload, qos, messageId, version);
        const theirs = reference({
          cmd: "publish",
          topic,
          payload: Buffer.from(payload),
          qos,
          messageId,
          retain: false,
          dup: false,
        }, version);
        assert.deepEqual(new Uint8Array(ours), theirs, `v${version} qos${qos} ${size} B`);
        assert.deepEqual(
          ours.byteLength,
          publishWireSize(topicBytes.byteLength, size, qos, version),
        );
      }
    }
  }
});

Deno.test("encodePublish keeps a payload that is a view into a larger buffer", () => {
  const big = new Uint8Array(64).map((_, i) => i);
  const view = big.subarray(10, 20);
  const frame = encodePublish(new TextEncoder().encode("t"), view, 1, 65535, 5);
  assert.deepEqual([...frame.subarray(frame.byteLength - 10)], [...view]);
  assert.deepEqual([frame[5], frame[6]], [0xff, 0xff]); // packet id 65535 after the 1-byte topic
});

Deno.test("encodePublish refuses what MQTT cannot carry", () => {
  const t = new TextEncoder().encode("t");
  assert.throws(() => encodePublish(t, new Uint8Array(1), 1, undefined, 5), RangeError);
  assert.throws(() => encodePublish(t, new Uint8Array(1), 1, 0, 5), RangeError);
  assert.throws(() => encodePublish(t, new Uint8Array(1), 1, 65536, 4), RangeError);
  assert.throws(
    () => encodePublish(new Uint8Array(70_000), new Uint8Array(1), 0, 0, 4),
    RangeError,
  );
});

Deno.test("encodePuback gives mqtt-packet's bytes", () => {
  for (const version of [3, 4, 5]) {
    for (const messageId of [0, 1, 255, 256, 4660, 65535]) {
      for (const reasonCode of [undefined, 0, 0x10, 0x80, 0x87, 0x97]) {
        const ours = encodePuback(messageId, reasonCode, version);
        assert.ok(ours !== null);
        const packet = { cmd: "puback", messageId, reasonCode };
        assert.deepEqual(new Uint8Array(ours), reference(packet, version), JSON.stringify(packet));
      }
    }
  }
});

Deno.test("encodePuback leaves a packet it cannot write to mqtt-packet", () => {
  assert.deepEqual(encodePuback(undefined, 0, 5), null);
  assert.deepEqual(encodePuback(1.5, 0, 5), null);
  assert.deepEqual(encodePuback(70_000, 0, 4), null);
  assert.deepEqual(encodePuback(-1, 0, 4), null);
  assert.deepEqual(encodePuback(1, 256, 5), null);
  assert.deepEqual(encodePuback(1, "0", 5), null);
});

Deno.test("writeToStream: a registered stream gets the same PUBACK bytes, in order", async () => {
  const ours = sink();
  setConnackExtras(ours.stream, {});
  const plain = sink();
  const packets = [
    { cmd: "puback", messageId: 1 },
    { cmd: "puback", messageId: 2, reasonCode: 0 },
    // Obscured like any refused topic (spec 5): 0x87 becomes 0x80 without a reason string.
    { cmd: "puback", messageId: 3, reasonCode: 0x87, properties: { reasonString: "no" } },
    { cmd: "pingresp" },
    { cmd: "puback", messageId: 4, reasonCode: 0x10, properties: { reasonString: "none" } },
  ];
  for (const p of packets) {
    assert.ok(codec.writeToStream({ ...p }, ours.stream, { protocolVersion: 5 }));
    codec.writeToStream({ ...p }, plain.stream, { protocolVersion: 5 });
  }
  // Both streams are corked until the next tick.
  await new Promise((resolve) => setTimeout(resolve, 0));
  const expected = Buffer.concat(packets.map((p) => {
    const q = p.cmd === "puback" && p.reasonCode === 0x87
      ? { cmd: "puback", messageId: p.messageId, reasonCode: 0x80 }
      : p;
    return Buffer.from(reference(q, 5));
  }));
  assert.deepEqual(ours.bytes(), new Uint8Array(expected));
  // An unregistered stream (e.g. MQTT.js's) is untouched: 0x87 and its reason string stay.
  assert.ok(plain.bytes().includes(0x87));
});
