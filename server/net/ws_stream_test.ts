import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { wsToStream } from "./ws_stream.ts";

/** A WebSocket pair over a real socket: the server end wrapped as a stream, the client raw. */
async function pair(): Promise<{
  stream: Duplex;
  serverWs: WebSocket;
  client: WebSocket;
  close(): Promise<void>;
}> {
  const http = createServer();
  const wss = new WebSocketServer({ server: http });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  const accepted = once(wss, "connection") as Promise<[WebSocket]>;
  const client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`);
  await once(client, "open");
  const [serverWs] = await accepted;
  const stream = wsToStream(serverWs);
  return {
    stream,
    serverWs,
    client,
    async close() {
      stream.destroy();
      client.terminate();
      await new Promise((r) => wss.close(r));
      await new Promise((r) => http.close(r));
    },
  };
}

Deno.test("wsToStream() sends corked writes as one binary frame", async () => {
  const p = await pair();
  try {
    const frames: Array<[Buffer, boolean]> = [];
    p.client.on("message", (data: Buffer, isBinary) => frames.push([data, isBinary]));
    const second = once(p.client, "message");
    // mqtt-packet writes a CONNACK in about 7 pieces inside cork()/uncork().
    p.stream.cork();
    for (const piece of [[0x20], [0x03], [0x00], [0x00], [0x00]]) {
      p.stream.write(Buffer.from(piece));
    }
    process.nextTick(() => p.stream.uncork());
    p.stream.write(Buffer.from([0xd0, 0x00])); // joins the corked batch too
    await new Promise((r) => setImmediate(r));
    p.stream.write(Buffer.from([0xc0, 0x00]));
    await second;
    assert.deepEqual(frames, [
      [Buffer.from([0x20, 0x03, 0x00, 0x00, 0x00, 0xd0, 0x00]), true],
      [Buffer.from([0xc0, 0x00]), true],
    ]);
  } finally {
    await p.close();
  }
});

Deno.test("wsToStream() reads every binary message in order and ends when the peer closes", async () => {
  const p = await pair();
  try {
    const chunks: Buffer[] = [];
    p.stream.on("data", (c: Buffer) => chunks.push(c));
    const ended = once(p.stream, "end");
    const closed = once(p.stream, "close");
    for (let i = 0; i < 5; i++) p.client.send(Buffer.from([i, i]));
    p.client.close(1000);
    await ended;
    await closed;
    assert.deepEqual(Buffer.concat(chunks), Buffer.from([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]));
  } finally {
    await p.close();
  }
});

Deno.test("wsToStream() pauses the socket while the reader lags and resumes it", async () => {
  const p = await pair();
  try {
    let paused = false;
    const pause = p.serverWs.pause.bind(p.serverWs);
    const wasPaused = new Promise<void>((resolve) => {
      p.serverWs.pause = () => {
        paused = true;
        pause();
        resolve();
      };
    });
    const message = Buffer.alloc(64 * 1024, 7);
    const count = 64; // 4 MiB: far above the stream's high-water mark
    for (let i = 0; i < count; i++) p.client.send(message);
    p.stream.pause();
    p.stream.once("readable", () => {}); // start buffering without consuming
    await wasPaused;
    let total = 0;
    const all = new Promise<void>((resolve) => {
      p.stream.on("data", (c: Buffer) => {
        total += c.length;
        if (total === message.length * count) resolve();
      });
    });
    p.stream.resume();
    await all;
    assert.equal(paused, true);
    assert.equal(p.serverWs.isPaused, false);
  } finally {
    await p.close();
  }
});

Deno.test("wsToStream() waits for the socket to flush once its buffer is full", async () => {
  const p = await pair();
  try {
    let received = 0;
    const big = Buffer.alloc(256 * 1024, 1);
    const count = 40; // 10 MiB
    const all = new Promise<void>((resolve) => {
      p.client.on("message", (d: Buffer) => {
        received += d.length;
        if (received === big.length * count) resolve();
      });
    });
    // Count the sends that had to wait for ws to flush (those passed a callback).
    let waited = 0;
    const send = p.serverWs.send.bind(p.serverWs);
    // deno-lint-ignore no-explicit-any
    (p.serverWs as any).send = (data: Buffer, opts: object, cb?: () => void) => {
      if (cb) waited++;
      send(data, opts, cb);
    };
    for (let i = 0; i < count; i++) p.stream.write(big);
    const finished = new Promise((r) => p.stream.end(r));
    await all;
    await finished;
    assert.ok(waited > 0, "no write waited for a flush");
    assert.ok(waited < count, "every write waited for a flush");
    assert.equal(received, big.length * count);
  } finally {
    await p.close();
  }
});

Deno.test("wsToStream() destroys the stream on a text frame [MQTT-6.0.0-1]", async () => {
  const p = await pair();
  try {
    const error = once(p.stream, "error");
    const clientClosed = once(p.client, "close");
    p.client.send("CONNECT");
    const [err] = await error;
    assert.match(String(err), /text frames/);
    const [code] = await clientClosed;
    assert.equal(code, 1006); // terminated
  } finally {
    await p.close();
  }
});

Deno.test("destroying the stream closes the WebSocket after sending queued data", async () => {
  const p = await pair();
  try {
    const frames: Buffer[] = [];
    p.client.on("message", (d: Buffer) => frames.push(d));
    const clientClosed = once(p.client, "close");
    p.stream.write(Buffer.from([0xe0, 0x00])); // e.g. an MQTT DISCONNECT
    await new Promise((r) => setImmediate(r));
    p.stream.destroy();
    const [code] = await clientClosed;
    assert.equal(code, 1000);
    assert.deepEqual(frames, [Buffer.from([0xe0, 0x00])]);
  } finally {
    await p.close();
  }
});

Deno.test("writing after the peer closed fails instead of hanging", async () => {
  const p = await pair();
  try {
    p.stream.on("data", () => {});
    p.client.close(1000);
    await once(p.serverWs, "close");
    const err = await new Promise<Error | null | undefined>((resolve) => {
      p.stream.on("error", () => {});
      p.stream.write(Buffer.from([0xc0, 0x00]), resolve);
    });
    assert.ok(err instanceof Error);
  } finally {
    await p.close();
  }
});

Deno.test("wsToStream() cuts a large corked burst into frames of at most 64 KiB", async () => {
  const p = await pair();
  try {
    const sizes: number[] = [];
    const bytes: Buffer[] = [];
    let total = 0;
    const expected = 20 * 10_000 + 100_000;
    const all = new Promise<void>((resolve) => {
      p.client.on("message", (d: Buffer) => {
        sizes.push(d.length);
        bytes.push(d);
        total += d.length;
        if (total === expected) resolve();
      });
    });
    const sent: Buffer[] = [];
    p.stream.cork();
    for (let i = 0; i < 20; i++) sent.push(Buffer.alloc(10_000, i));
    sent.push(Buffer.alloc(100_000, 99)); // one write larger than a frame stays whole
    for (const b of sent) p.stream.write(b);
    p.stream.uncork();
    await all;
    assert.deepEqual(sizes, [60_000, 60_000, 60_000, 20_000, 100_000]);
    assert.deepEqual(Buffer.concat(bytes), Buffer.concat(sent));
  } finally {
    await p.close();
  }
});
