import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createServer, type Server, type Socket } from "node:net";
import { classifyFirstByte, sniffFirstByte } from "./sniff.ts";
import { connectTcp } from "./_test_util.ts";

Deno.test("classifyFirstByte tells TLS, HTTP, MQTT and the rest apart (spec 4.2)", () => {
  assert.equal(classifyFirstByte(0x16), "tls");
  assert.equal(classifyFirstByte(0x10), "mqtt");
  for (const c of "AGPZ") assert.equal(classifyFirstByte(c.charCodeAt(0)), "http");
  for (const b of [0x00, 0x20, 0x40, 0x5b, 0x61, 0x7a, 0xff]) {
    assert.equal(classifyFirstByte(b), "other");
  }
});

/** A server whose accepted sockets are handed to `onSocket`; closed with the returned function. */
async function withServer(
  onSocket: (s: Socket) => void,
  body: (port: number) => Promise<void>,
): Promise<void> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => {
    sockets.push(s);
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    await body((server.address() as { port: number }).port);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
}

interface Sniffed {
  readonly socket: Socket;
  readonly byte: Promise<number | null>;
}

/** Accepts one connection and starts sniffing it as soon as it arrives. */
function sniffAccepted(timeoutMs: number) {
  const accepted = Promise.withResolvers<Sniffed>();
  const onSocket = (socket: Socket) => {
    socket.on("error", () => {});
    accepted.resolve({ socket, byte: sniffFirstByte(socket, timeoutMs) });
  };
  return { onSocket, accepted: accepted.promise };
}

Deno.test("sniffFirstByte returns the first byte and leaves every byte readable", async () => {
  const { onSocket, accepted } = sniffAccepted(1000);
  await withServer(onSocket, async (port) => {
    const client = await connectTcp(port);
    client.write(Buffer.from([0x10, 1, 2, 3]));
    const { socket, byte } = await accepted;
    assert.equal(await byte, 0x10);
    assert.ok(socket.isPaused(), "the stream stays paused for the next owner");
    const all = Promise.withResolvers<Buffer>();
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      if (Buffer.concat(chunks).length >= 8) all.resolve(Buffer.concat(chunks));
    });
    client.write(Buffer.from([4, 5, 6, 7]));
    socket.resume();
    assert.deepEqual([...await all.promise], [0x10, 1, 2, 3, 4, 5, 6, 7]);
    client.destroy();
  });
});

Deno.test("sniffFirstByte gives null when nothing arrives in time", async () => {
  const { onSocket, accepted } = sniffAccepted(100);
  await withServer(onSocket, async (port) => {
    const started = Date.now();
    const client = await connectTcp(port);
    const { byte } = await accepted;
    assert.equal(await byte, null);
    assert.ok(Date.now() - started >= 90, "timed out too early");
    client.destroy();
  });
});

Deno.test("sniffFirstByte gives null when the peer closes first", async () => {
  const { onSocket, accepted } = sniffAccepted(5000);
  await withServer(onSocket, async (port) => {
    const client = await connectTcp(port);
    client.end();
    const started = Date.now();
    const { byte } = await accepted;
    assert.equal(await byte, null);
    assert.ok(Date.now() - started < 2000, "waited for the timer instead of the close");
    client.destroy();
  });
});
