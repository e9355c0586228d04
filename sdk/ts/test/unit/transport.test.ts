import assert from "node:assert/strict";
import { Duplex } from "node:stream";
import { test } from "node:test";
import { FRAME_MAX_BYTES, joinFrames, tuneStream } from "../../src/transport.ts";

type Callback = (err?: Error | null) => void;

/**
 * A stand-in for the `ws` stream MQTT.js builds in Node (`createWebSocketStream`): a Duplex
 * with an own `_write` that "sends one frame" per call and no `_writev`.
 */
function fakeWsStream(options: { decodeStrings?: boolean } = {}) {
  const frames: Buffer[] = [];
  const pending: Callback[] = [];
  let hold = false;
  const stream = new Duplex({ read() {}, decodeStrings: options.decodeStrings ?? true });
  stream._write = (chunk: Buffer | Uint8Array, _enc: string, cb: Callback) => {
    frames.push(Buffer.from(chunk));
    if (hold) pending.push(cb);
    else cb();
  };
  return {
    stream,
    frames,
    /** While true, frames are "in flight": their callbacks wait for `release`. */
    hold(on: boolean) {
      hold = on;
    },
    release(err?: Error) {
      for (const cb of pending.splice(0)) cb(err);
    },
  };
}

/** Writes `pieces` corked, as mqtt-packet does for one packet, and uncorks on the next tick. */
function writePacket(stream: Duplex, pieces: (Buffer | string)[]): Promise<void> {
  stream.cork();
  const done = Promise.all(
    pieces.map((p) => new Promise<void>((r, j) => stream.write(p, (e) => (e ? j(e) : r())))),
  );
  process.nextTick(() => stream.uncork());
  return done.then(() => {});
}

test("ws: the corked pieces of one packet become one frame (one ws.send)", async () => {
  const f = fakeWsStream();
  assert.equal(tuneStream(f.stream, "ws://127.0.0.1:7443/mqtt"), "one_frame_per_packet");
  // PUBLISH "hello" to "a/b" in the pieces mqtt-packet writes: type, length, topic, payload.
  const pieces = [[0x30], [0x0a], [0x00, 0x03], "a/b", "hello"].map((b) => Buffer.from(b));
  await writePacket(f.stream, pieces);
  assert.equal(f.frames.length, 1);
  assert.deepEqual(f.frames[0], Buffer.concat(pieces));
});

test("without the fix the same packet is five frames (what the fix is for)", async () => {
  const f = fakeWsStream();
  await writePacket(f.stream, [1, 2, 3, 4, 5].map((b) => Buffer.from([b])));
  assert.equal(f.frames.length, 5);
});

test("ws: writes made while a frame is in flight wait for it and then go as one frame", async () => {
  const f = fakeWsStream();
  tuneStream(f.stream, "wss://relay.example/mqtt");
  f.hold(true);
  const first = writePacket(f.stream, [Buffer.from("A1"), Buffer.from("A2")]);
  await new Promise((r) => setImmediate(r));
  assert.equal(f.frames.length, 1);
  let secondDone = false;
  const second = writePacket(f.stream, [Buffer.from("B1"), Buffer.from("B2")])
    .then(() => (secondDone = true));
  const third = writePacket(f.stream, [Buffer.from("C1")]);
  await new Promise((r) => setImmediate(r));
  assert.equal(f.frames.length, 1, "back-pressure: nothing is sent until the frame is out");
  assert.equal(secondDone, false);
  f.hold(false);
  f.release();
  await Promise.all([first, second, third]);
  assert.deepEqual(f.frames.map(String), ["A1A2", "B1B2C1"]);
});

test("ws: a failed send fails the writes and the stream", async () => {
  const f = fakeWsStream();
  tuneStream(f.stream, "ws://x/mqtt");
  f.hold(true);
  const errored = new Promise<Error>((r) => f.stream.once("error", r));
  const p = writePacket(f.stream, [Buffer.from("x"), Buffer.from("y")]);
  await new Promise((r) => setImmediate(r));
  f.release(new Error("WebSocket is not open"));
  await assert.rejects(p, /not open/);
  assert.match((await errored).message, /not open/);
});

test("ws: string pieces are sent as UTF-8 bytes in the same frame", async () => {
  const f = fakeWsStream({ decodeStrings: false });
  tuneStream(f.stream, "ws://x/mqtt");
  await writePacket(f.stream, [Buffer.from([0x30]), "主题", Buffer.from("!")]);
  assert.equal(f.frames.length, 1);
  assert.deepEqual(
    f.frames[0],
    Buffer.concat([Buffer.from([0x30]), Buffer.from("主题"), Buffer.from("!")]),
  );
});

test("joinFrames cuts bursts before 64 KiB and sends a larger piece on its own", () => {
  const piece = (n: number) => ({ chunk: new Uint8Array(n), encoding: "buffer" });
  const half = FRAME_MAX_BYTES / 2;
  const sizes = (chunks: { chunk: Uint8Array; encoding: string }[]) =>
    joinFrames(chunks).map((f) => f.byteLength);
  assert.deepEqual(sizes([piece(10), piece(20)]), [30]);
  assert.deepEqual(sizes([piece(half), piece(half)]), [FRAME_MAX_BYTES]);
  assert.deepEqual(sizes([piece(half), piece(half), piece(1)]), [FRAME_MAX_BYTES, 1]);
  const big = FRAME_MAX_BYTES + 1;
  assert.deepEqual(sizes([piece(5), piece(big), piece(5)]), [5, big, 5]);
  const one = new Uint8Array(3);
  assert.equal(joinFrames([{ chunk: one, encoding: "buffer" }])[0], one, "not copied");
});

test("ws: a stream with its own _writev (MQTT.js's browser transport) is left as it is", () => {
  const f = fakeWsStream();
  const own = (_chunks: unknown, cb: Callback) => cb();
  (f.stream as unknown as { _writev: unknown })._writev = own;
  assert.equal(tuneStream(f.stream, "ws://x/mqtt"), "none");
  assert.equal((f.stream as unknown as { _writev: unknown })._writev, own);
  const objects = new Duplex({
    objectMode: true,
    read() {},
    write(_c, _e, cb) {
      cb();
    },
  });
  assert.equal(tuneStream(objects, "ws://x/mqtt"), "none");
});

test("mqtt:// and mqtts:// call setNoDelay(true); other shapes and schemes are left alone", () => {
  for (const url of ["mqtt://127.0.0.1:7443", "mqtts://relay.example:7443", "MQTT://h:1"]) {
    const calls: (boolean | undefined)[] = [];
    const socket = { setNoDelay: (on?: boolean) => calls.push(on) };
    assert.equal(tuneStream(socket, url), "no_delay", url);
    assert.deepEqual(calls, [true], url);
  }
  assert.equal(tuneStream({}, "mqtt://h:1"), "none", "no setNoDelay (e.g. a SOCKS stream)");
  assert.equal(tuneStream(undefined, "mqtt://h:1"), "none");
  const socket = { setNoDelay: () => assert.fail("not on ws://") };
  assert.equal(tuneStream(socket, "ws://h/mqtt"), "none");
  assert.equal(tuneStream(fakeWsStream().stream, "wx://h/mqtt"), "none");
});
