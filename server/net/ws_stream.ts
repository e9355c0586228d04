import { Buffer } from "node:buffer";
import { Duplex } from "node:stream";
import { WebSocket } from "ws";

/** Above this many bytes queued in the WebSocket, writes wait for the send callback. */
const SEND_HIGH_WATER = 64 * 1024;
/** Coalesced writes are cut into frames of at most this size (unless one write is larger). */
const FRAME_MAX = 64 * 1024;

/**
 * Wrap an open WebSocket carrying MQTT (spec 4.4) as a byte stream for the broker.
 *
 * - Each incoming binary message is pushed as one chunk; a text frame closes the connection
 *   [MQTT-6.0.0-1]. When the reader falls behind, the socket is paused.
 * - Outgoing writes are coalesced with `writev` into ONE binary frame: mqtt-packet writes a
 *   CONNACK in about 7 corked pieces (DESIGN pitfall 5). Bursts are cut into frames of at most
 *   64 KiB; a single larger write is sent as its own frame.
 * - Writes complete at once while `bufferedAmount` is small, else when `ws` flushes them.
 * - The WebSocket closing ends the stream; destroying the stream closes the WebSocket (with
 *   an error: terminates it).
 *
 * Every call for the same WebSocket returns the same stream: two adapters on one socket would
 * split its messages between them.
 *
 * Deno's `read()` returns only one chunk: apply the broker's read patch before handing this to
 * aedes (DESIGN pitfall 4).
 *
 * @example
 * ```ts
 * wss.handleUpgrade(req, socket, head, (ws) => broker.handle({ transport: "ws", ws, ... }));
 * // inside the broker: aedes.handle(wsToStream(ws))
 * ```
 */
export function wsToStream(ws: WebSocket): Duplex {
  // One stream per WebSocket: the listener caps its queue, then the broker reads it.
  let stream = streams.get(ws);
  if (stream === undefined) {
    stream = new WsStream(ws);
    streams.set(ws, stream);
  }
  return stream;
}

const streams = new WeakMap<WebSocket, Duplex>();

class WsStream extends Duplex {
  #ws: WebSocket;

  constructor(ws: WebSocket) {
    super({ allowHalfOpen: false });
    this.#ws = ws;
    ws.on("message", (data, isBinary) => this.#onMessage(data, isBinary));
    ws.on("close", () => {
      if (!this.destroyed) this.push(null);
    });
    ws.on("error", (err) => this.destroy(err));
    if (ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) {
      queueMicrotask(() => this.push(null));
    }
  }

  #onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.destroyed) return;
    if (!isBinary) {
      this.destroy(new Error("WebSocket text frames are not allowed for MQTT"));
      return;
    }
    const chunk = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.from(data);
    if (!this.push(chunk)) this.#ws.pause();
  }

  override _read(): void {
    if (this.#ws.isPaused) this.#ws.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#send(chunk, cb);
  }

  override _writev(
    chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>,
    cb: (err?: Error | null) => void,
  ): void {
    if (chunks.length === 1) return this.#send(chunks[0].chunk, cb);
    // Small pieces become one frame; a frame is cut before it would pass FRAME_MAX, so a burst
    // of large downlinks is not copied into one huge buffer. A packet may then span frames,
    // which receivers must handle [MQTT-6.0.0-2].
    const frames: Buffer[] = [];
    let batch: Buffer[] = [];
    let size = 0;
    for (const { chunk } of chunks) {
      if (size > 0 && size + chunk.length > FRAME_MAX) {
        frames.push(Buffer.concat(batch, size));
        batch = [];
        size = 0;
      }
      batch.push(chunk);
      size += chunk.length;
    }
    frames.push(batch.length === 1 ? batch[0] : Buffer.concat(batch, size));
    const last = frames.pop()!;
    if (this.#ws.readyState === WebSocket.OPEN) {
      for (const frame of frames) this.#ws.send(frame, { binary: true });
    }
    this.#send(last, cb);
  }

  #send(frame: Buffer, cb: (err?: Error | null) => void): void {
    const ws = this.#ws;
    if (ws.readyState !== WebSocket.OPEN) {
      cb(new Error("WebSocket is not open"));
      return;
    }
    if (ws.bufferedAmount < SEND_HIGH_WATER) {
      // Fast path: failures surface as the socket's `error`/`close`.
      ws.send(frame, { binary: true });
      cb();
    } else {
      ws.send(frame, { binary: true }, (err) => cb(err ?? null));
    }
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#close(null);
    cb();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.#close(err);
    cb(err);
  }

  #close(err: Error | null): void {
    const ws = this.#ws;
    if (ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) return;
    // A graceful close sends queued data (e.g. an MQTT DISCONNECT) before the close frame.
    if (err) ws.terminate();
    else ws.close(1000);
  }
}
