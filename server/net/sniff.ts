/**
 * First-byte protocol detection (spec 4.2).
 *
 * The byte is read with `once("data")`, then the stream is paused and the chunk put back with
 * `unshift`, so whoever gets the stream next reads it from the start. Reading with
 * `once("readable") + read(1)` instead leaves Deno's streams stalled (DESIGN pitfalls 4 and 5).
 */
import { type Duplex, Readable } from "node:stream";

/**
 * Pauses `stream` the way Node pauses a socket: no more `data` events, while the socket keeps
 * reading into the stream's buffer (up to its high-water mark). Deno's `net.Socket.prototype.pause`
 * also stops the socket's reads, which Node does only for sockets made with `onread`, and leaves
 * the Readable's `reading` flag set when a read was pending. When the chunk that was just handed
 * out came from the buffer (an earlier `unshift`: the bytes after a PROXY header that arrived in
 * the same segment), a read is pending, and the socket then never reads again for a consumer that
 * uses `readable` and `read()` (aedes): the connection stalls after its CONNECT. `resume()` would
 * restart the reads; `read()` does not. Every sniffing step pauses with this instead.
 */
export function pauseData(stream: Duplex): void {
  Readable.prototype.pause.call(stream);
}

/** What a connection's first byte says it speaks. */
export type FirstByteKind = "tls" | "http" | "mqtt" | "other";

const TLS_HANDSHAKE = 0x16;
const MQTT_CONNECT = 0x10;
const UPPER_A = 0x41;
const UPPER_Z = 0x5a;

/**
 * Classifies a first byte: 0x16 a TLS ClientHello, `A`-`Z` an HTTP method, 0x10 an MQTT CONNECT.
 *
 * @example
 * classifyFirstByte(0x47); // "http" ("G" of GET)
 */
export function classifyFirstByte(byte: number): FirstByteKind {
  if (byte === TLS_HANDSHAKE) return "tls";
  if (byte === MQTT_CONNECT) return "mqtt";
  if (byte >= UPPER_A && byte <= UPPER_Z) return "http";
  return "other";
}

/**
 * Waits for the first byte of `stream` and returns it, leaving the stream paused with that byte
 * unread. Resolves null when nothing arrives within `timeoutMs`, or the stream ends, closes or
 * fails first; the caller then closes it. The caller keeps its own "error" listener attached.
 */
export async function sniffFirstByte(stream: Duplex, timeoutMs: number): Promise<number | null> {
  const chunk = await sniffFirstChunk(stream, timeoutMs);
  return chunk === null ? null : chunk[0];
}

/**
 * Like {@linkcode sniffFirstByte}, but returns the whole first chunk (never empty), which is left
 * unread too. A stream paused by an earlier reader (the PROXY header) is resumed to get it.
 */
export function sniffFirstChunk(stream: Duplex, timeoutMs: number): Promise<Uint8Array | null> {
  return new Promise((resolve) => {
    const finish = (chunk: Uint8Array | null) => {
      clearTimeout(timer);
      stream.off("data", onData);
      stream.off("end", onGone);
      stream.off("close", onGone);
      stream.off("error", onGone);
      resolve(chunk);
    };
    const onData = (chunk: Uint8Array) => {
      pauseData(stream);
      stream.unshift(chunk);
      finish(chunk.length > 0 ? chunk : null);
    };
    const onGone = () => finish(null);
    const timer = setTimeout(onGone, timeoutMs);
    stream.once("data", onData);
    stream.once("end", onGone);
    stream.once("close", onGone);
    stream.once("error", onGone);
    if (stream.isPaused()) stream.resume();
  });
}

/** Bytes of the first chunk {@linkcode sniffHead} returns: enough for an MQTT fixed header. */
export const HEAD_BYTES = 5;

/**
 * Like {@linkcode sniffFirstByte}, but returns the first up to {@linkcode HEAD_BYTES} bytes of
 * the first chunk (a copy), so an MQTT CONNECT's declared size can be checked (issue 28).
 */
export async function sniffHead(stream: Duplex, timeoutMs: number): Promise<Uint8Array | null> {
  const chunk = await sniffFirstChunk(stream, timeoutMs);
  return chunk === null ? null : Uint8Array.from(chunk.subarray(0, HEAD_BYTES));
}
