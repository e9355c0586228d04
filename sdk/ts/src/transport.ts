/**
 * Fixes for MQTT.js's Node transports (Node.js and Deno), applied to the stream that
 * `mqtt.connect` has just built, before its first byte leaves (spec 9 "连接" step 1: WebSocket to
 * `<path>/mqtt` with subprotocol `mqtt`, raw TCP only when asked for). Both were measured with
 * `bench/rtt.mjs`; see docs/BENCHMARKS.md, "TypeScript SDK".
 *
 * - `mqtt://`, `mqtts://`: MQTT.js leaves Nagle's algorithm on. A round trip in which the client
 *   writes twice (the PUBACK of a `resp`, then the next request) then waits for the server's
 *   delayed ACK, about 40 ms. The socket gets `setNoDelay(true)`, as devices and the Go SDK do.
 * - `ws://`, `wss://`: MQTT.js's Node transport wraps the `ws` WebSocket with
 *   `createWebSocketStream`, which sends every `write` as its own WebSocket frame. mqtt-packet
 *   writes a packet in several small corked pieces (fixed header, length, topic, properties,
 *   payload), so a request/response round trip took about 10 frames, and the server pays for each.
 *   The stream gets a `_writev` that joins the corked pieces into ONE frame: one frame per MQTT
 *   packet, or per event-loop turn when several packets are written in one turn. The server does
 *   the same in the other direction (server/net/ws_stream.ts), and MQTT.js's own browser
 *   transport does it with `BufferedDuplex`'s `writev`.
 *
 * Everything is feature-detected on the stream, so nothing here imports a Node module. In
 * browsers MQTT.js's WebSocket stream already has its own `_writev` and no `setNoDelay`, so it is
 * left exactly as it is.
 */

/** Frames are cut before they would grow past this (unless one piece is larger on its own). */
export const FRAME_MAX_BYTES = 64 * 1024;

/** Callback of Node's `Writable#_write` / `_writev`. */
type WriteCallback = (err?: Error | null) => void;

/** One buffered write as Node's `Writable` hands it to `_writev`. */
interface BufferedWrite {
  readonly chunk: Uint8Array | string;
  readonly encoding: string;
}

/** The part of a Node `Writable` (MQTT.js's Node WebSocket stream) that the coalescing uses. */
interface NodeWritable {
  _write(chunk: Uint8Array, encoding: string, callback: WriteCallback): void;
  _writev?: ((chunks: BufferedWrite[], callback: WriteCallback) => void) | null;
  readonly writableObjectMode?: boolean;
}

/** The part of a Node `net.Socket` / `tls.TLSSocket` used here. */
interface NoDelaySocket {
  setNoDelay(noDelay?: boolean): unknown;
}

/** What {@link tuneStream} did, for tests and diagnostics. */
export type Tuning = "no_delay" | "one_frame_per_packet" | "none";

/**
 * Applies the transport fix for `url`'s scheme to `stream` (MQTT.js's `client.stream`, right after
 * `mqtt.connect` returned: the CONNECT packet is still corked in it).
 *
 * @param stream The stream MQTT.js built; its type is checked at run time.
 * @param url The URL given to `mqtt.connect` (`ws:`, `wss:`, `mqtt:` or `mqtts:`).
 * @returns Which fix was applied; `"none"` in browsers and for streams of another shape.
 *
 * @example
 * ```ts
 * const client = mqtt.connect(url, options);
 * tuneStream(client.stream, url);
 * ```
 */
export function tuneStream(stream: unknown, url: string): Tuning {
  if (typeof stream !== "object" || stream === null) return "none";
  const scheme = url.slice(0, url.indexOf(":")).toLowerCase();
  if (scheme === "mqtt" || scheme === "mqtts") {
    const socket = stream as Partial<NoDelaySocket>;
    if (typeof socket.setNoDelay !== "function") return "none";
    // tls.TLSSocket passes setNoDelay on to its TCP handle; before the connection is up, Node
    // remembers it and applies it once the socket exists.
    socket.setNoDelay(true);
    return "no_delay";
  }
  if (scheme === "ws" || scheme === "wss") {
    const writable = stream as Partial<NodeWritable>;
    // The browser transport (BufferedDuplex) already has a _writev; leave it as it is.
    if (typeof writable._write !== "function" || typeof writable._writev === "function") {
      return "none";
    }
    if (writable.writableObjectMode === true) return "none";
    writable._writev = coalescingWritev;
    return "one_frame_per_packet";
  }
  return "none";
}

/**
 * `_writev` for a stream whose `_write` sends one WebSocket frame: joins the buffered pieces and
 * passes them to `_write`, so back-pressure (the callback fires once `ws` has flushed the frame),
 * errors and close stay those of the stream. Node's `Writable` calls `_writev` only when more
 * than one write is buffered, i.e. after a `cork()` (mqtt-packet corks every packet until the
 * next tick) or while the previous frame is still being flushed.
 */
function coalescingWritev(this: NodeWritable, chunks: BufferedWrite[], cb: WriteCallback): void {
  const frames = joinFrames(chunks);
  const send = (i: number): void => {
    const frame = frames[i]!;
    if (i === frames.length - 1) {
      this._write(frame, "buffer", cb);
      return;
    }
    this._write(frame, "buffer", (err) => (err ? cb(err) : send(i + 1)));
  };
  send(0);
}

const encoder = new TextEncoder();

/**
 * Joins buffered writes into frames of at most {@link FRAME_MAX_BYTES}. A batch is cut before a
 * piece that would push it past the limit, so a burst written while the socket was busy does not
 * become one huge frame: the server caps a WebSocket message at its MQTT packet cap (spec 5
 * `MaximumPacketSize`, 768 KiB) plus 1 KiB. A packet may then span two frames, which MQTT over
 * WebSocket allows [MQTT-6.0.0-2]; a piece larger than the limit is sent on its own.
 *
 * @example
 * ```ts
 * joinFrames([{ chunk: new Uint8Array([0x30]), encoding: "buffer" },
 *             { chunk: new Uint8Array([0x00]), encoding: "buffer" }]); // [Uint8Array [0x30, 0x00]]
 * ```
 */
export function joinFrames(chunks: readonly BufferedWrite[]): Uint8Array[] {
  const frames: Uint8Array[] = [];
  let batch: Uint8Array[] = [];
  let size = 0;
  const flush = () => {
    if (batch.length === 0) return;
    frames.push(batch.length === 1 ? batch[0]! : concat(batch, size));
    batch = [];
    size = 0;
  };
  for (const { chunk } of chunks) {
    const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
    if (size > 0 && size + bytes.byteLength > FRAME_MAX_BYTES) flush();
    batch.push(bytes);
    size += bytes.byteLength;
  }
  flush();
  return frames;
}

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
