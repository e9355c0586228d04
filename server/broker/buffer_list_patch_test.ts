import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqttPacket from "mqtt-packet";
import { patchBufferList } from "./buffer_list_patch.ts";

// deno-lint-ignore no-explicit-any
const codec = mqttPacket as any;

type Method = "readUInt8" | "readUInt16BE" | "readUInt32BE";
// deno-lint-ignore no-explicit-any
type AnyFn = (...args: any[]) => unknown;

/** A deterministic pseudo-random sequence (xorshift32), so every run checks the same cases. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

/** Every packet shape the broker reads, with bodies whose lengths cross length-field sizes. */
function packets(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const size of [0, 1, 120, 127, 128, 1024, 16_383, 16_384, 70_000]) {
    out.push({
      cmd: "publish",
      topic: "nix/c/dev-ü-1/up",
      payload: Buffer.alloc(size, size & 0xff),
      qos: 1,
      messageId: 1 + (size % 65_000),
      retain: false,
      dup: false,
      properties: { payloadFormatIndicator: true, messageExpiryInterval: 70_000 },
    });
  }
  out.push({ cmd: "puback", messageId: 65_535, reasonCode: 0 });
  out.push({ cmd: "puback", messageId: 7, reasonCode: 0x80, properties: { reasonString: "x" } });
  out.push({
    cmd: "subscribe",
    messageId: 300,
    subscriptions: [{ topic: "nix/c/a/down", qos: 1, nl: false, rap: false, rh: 0 }],
  });
  out.push({ cmd: "pingreq" });
  out.push({ cmd: "disconnect", reasonCode: 0 });
  return out;
}

/** Parses `chunks` in turn; returns the packets as JSON, or the first error's message. */
function parseAll(chunks: Uint8Array[]): string[] {
  const parser = codec.parser({ protocolVersion: 5 });
  const seen: string[] = [];
  parser.on("packet", (p: unknown) => seen.push(JSON.stringify(p)));
  parser.on("error", (e: Error) => seen.push(`error: ${e.message}`));
  for (const c of chunks) parser.parse(Buffer.from(c));
  return seen;
}

/** The same bytes cut at pseudo-random places (one piece, many pieces, single bytes). */
function cuts(bytes: Uint8Array, next: () => number): Uint8Array[][] {
  const pieces = (n: number) => {
    const out: Uint8Array[] = [];
    for (let i = 0; i < bytes.length;) {
      const len = Math.max(1, Math.floor(next() * n));
      out.push(bytes.subarray(i, i + len));
      i += len;
    }
    return out;
  };
  return [[bytes], pieces(7), pieces(300), pieces(40_000)];
}

function outcome(fn: () => unknown): string {
  try {
    return `value ${String(fn())}`;
  } catch (err) {
    return `throws ${(err as Error).name}`;
  }
}

Deno.test("the patched BufferList reads what bl reads, and fails where bl fails", () => {
  const parser = codec.parser({ protocolVersion: 5 });
  const list = parser._list;
  const proto = Object.getPrototypeOf(list);
  const original: Record<string, AnyFn> = {};
  for (const m of ["readUInt8", "readUInt16BE", "readUInt32BE"]) original[m] = proto[m];
  const originalToString: AnyFn = proto.toString;
  patchBufferList(list);
  patchBufferList(list); // a second call changes nothing
  assert.notEqual(proto.readUInt8, original.readUInt8, "the prototype is patched");
  const next = rng(19);
  const bytes = new Uint8Array(64).map(() => Math.floor(next() * 256));
  bytes.set(new TextEncoder().encode("ü€x"), 10); // multi-byte UTF-8 for toString
  let checked = 0;
  for (const split of [[64], [20, 44], [1, 30, 33]]) {
    list._bufs.length = 0;
    list.length = 0;
    let at = 0;
    for (const n of split) {
      list.append(Buffer.from(bytes.subarray(at, at + n)));
      at += n;
    }
    for (const offset of [0, 1, 9, 10, 19, 20, 21, 58, 60, 61, 62, 63, 64, 65, -1, 1.5]) {
      for (const m of ["readUInt8", "readUInt16BE", "readUInt32BE"] as Method[]) {
        const theirs = outcome(() => original[m].call(list, offset));
        assert.equal(outcome(() => list[m](offset)), theirs, `${m}(${offset}) split ${split}`);
        checked++;
      }
      for (const end of [offset, offset + 1, offset + 3, 64, 70]) {
        const theirs = outcome(() => originalToString.call(list, "utf8", offset, end));
        assert.equal(
          outcome(() => list.toString("utf8", offset, end)),
          theirs,
          `toString(utf8, ${offset}, ${end}) split ${split}`,
        );
        checked++;
      }
    }
    assert.equal(outcome(() => list.readUInt8()), outcome(() => original.readUInt8.call(list)));
  }
  assert.equal(checked, 3 * 16 * 8);
});

Deno.test("a patched parser reads every packet shape as before, however the bytes are cut", () => {
  const wire: Uint8Array[] = packets().map((p) =>
    new Uint8Array(codec.generate(p, { protocolVersion: 5 }))
  );
  const all = new Uint8Array(Buffer.concat(wire));
  // Malformed: a length field of five bytes, a topic longer than its packet, and a one-byte id
  // (which mqtt-packet reads as id -1; the patch must not change that either).
  const bad = [
    [0x30, 0xff, 0xff, 0xff, 0xff, 0x01],
    [0x32, 0x05, 0x00, 0x09, 0x61, 0x62, 0x63],
    [0x40, 0x01, 0x00],
  ].map((b) => new Uint8Array(b));
  const before = [...cuts(all, rng(7)), ...bad.map((b) => [b])].map(parseAll);
  assert.equal(before[0].length, wire.length);
  assert.ok(before[0].every((p) => !p.startsWith("error")));
  assert.deepEqual(before.slice(-3).map((r) => r[0].slice(0, 40)), [
    "error: Invalid variable byte integer",
    "error: Cannot parse topic",
    '{"cmd":"puback","retain":false,"qos":0,"',
  ]);
  patchBufferList(codec.parser({ protocolVersion: 5 })._list);
  const after = [...cuts(all, rng(7)), ...bad.map((b) => [b])].map(parseAll);
  assert.deepEqual(after, before);
});
