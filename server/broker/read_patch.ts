import type { Readable } from "node:stream";

/**
 * Make `stream.read()` with no size (or `null`) return everything buffered, as Node does.
 *
 * Deno's `node:stream` returns only the FIRST buffered chunk and does not emit `readable` again
 * while data remains (DESIGN pitfall 4). aedes reads with `conn.read(null)` once per `readable`,
 * so two chunks buffered while it was busy (authenticating, or several WebSocket frames in one
 * TCP segment) would stall the connection. Apply to every stream handed to aedes.
 *
 * @example
 * ```ts
 * patchRead(socket);
 * aedes.handle(socket);
 * ```
 */
export function patchRead(stream: Readable): void {
  const read = stream.read.bind(stream);
  stream.read = (size?: number | null): ReturnType<Readable["read"]> =>
    read(size ?? (stream.readableLength || undefined));
}
