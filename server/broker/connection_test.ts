import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Duplex } from "node:stream";
import { Connection } from "./connection.ts";
import { patchRead } from "./read_patch.ts";

/**
 * A stream as the broker holds it at shutdown: the client's input piled up unread, because its
 * reader (aedes) paused after taking one chunk, as a full request pipeline makes it do.
 */
function pausedConnection(): { conn: Connection; stream: Duplex; written: Buffer[] } {
  const written: Buffer[] = [];
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      written.push(chunk);
      cb();
    },
  });
  patchRead(stream);
  const conn = new Connection(stream, "tcp", "127.0.0.1", false);
  stream.once("close", () => conn.markClosed());
  let took = 0;
  const nextBatch = () => {
    if (took++ === 0) stream.read();
  };
  stream.on("readable", nextBatch);
  conn.client = { _nextBatch: nextBatch };
  return { conn, stream, written };
}

/** Waits until `stream` has emitted `readable` at least once and then its queue stopped draining. */
async function pileUp(stream: Duplex): Promise<void> {
  stream.push(Buffer.from("first"));
  await new Promise((r) => stream.once("readable", r));
  for (let i = 0; i < 5; i++) {
    stream.push(Buffer.alloc(1000, i));
    await new Promise((r) => setTimeout(r, 0));
  }
  assert.ok(stream.readableLength >= 5000, "the input piled up unread");
}

Deno.test("farewell writes the last bytes, drops unread input and ends when the client closes", async () => {
  const { conn, stream, written } = pausedConnection();
  await pileUp(stream);
  const farewell = conn.farewell(Buffer.from([0xe0, 0x01, 0x8b]), 5_000);
  // The client reads the DISCONNECT and closes its side.
  stream.push(null);
  assert.equal(await farewell, true, "closed by the client, not by the timeout");
  assert.equal(conn.closed, true);
  assert.deepEqual(written.map((b) => [...b]), [[0xe0, 0x01, 0x8b]]);
  assert.equal(stream.readableLength, 0);
});

Deno.test("farewell gives up after its wait when the client never closes", async () => {
  const { conn, stream } = pausedConnection();
  await pileUp(stream);
  assert.equal(await conn.farewell(null, 50), false);
  assert.equal(conn.closed, false);
  stream.destroy();
});
