/**
 * The per-connection cap on queued outgoing bytes (issue 10 item 11).
 *
 * A peer that stops reading makes every write pile up in memory: the socket's send buffer fills
 * and the stream queues the rest. Past `maxBytes` the connection is closed as a slow consumer,
 * so one reader cannot pin the server's memory.
 */
import type { Duplex } from "node:stream";
import type { Logger } from "../log/log.ts";
import { countClosedConnection } from "../metrics/metrics.ts";

/** Options of {@linkcode capQueuedBytes}. */
export interface QueueCapOptions {
  /** Most bytes that may wait to be sent. */
  readonly maxBytes: number;
  /** The bytes waiting now, in every layer this connection writes through. */
  readonly queued: () => number;
  /** Called once, with the queued bytes, when the cap is passed; the stream is then destroyed. */
  readonly onOver: (queued: number) => void;
}

/**
 * Checks the queue after every write to `stream`; past the cap, calls `onOver` and destroys the
 * stream with an error (a WebSocket is then terminated, not closed gracefully).
 *
 * @example
 * capQueuedBytes(socket, {
 *   maxBytes: 8 << 20,
 *   queued: () => socket.writableLength,
 *   onOver: (n) => log.warn("Slow consumer closed", { queued_bytes: n }),
 * });
 */
export function capQueuedBytes(stream: Duplex, o: QueueCapOptions): void {
  const write = stream.write;
  let over = false;
  stream.write = function (this: Duplex, ...args: Parameters<Duplex["write"]>): boolean {
    const ok = write.apply(this, args);
    if (!ok && !over) {
      const queued = o.queued();
      if (queued > o.maxBytes) {
        over = true;
        o.onOver(queued);
        // Not inside the writer's own call: it may go on writing the rest of its packet.
        queueMicrotask(() => stream.destroy(new Error("Slow consumer: too many bytes queued")));
      }
    }
    return ok;
  } as Duplex["write"];
}

/** Logs and counts one connection closed as a slow consumer. */
export function logSlowConsumer(
  log: Logger,
  transport: "tcp" | "ws",
  remote: string,
  queued: number,
  max: number,
): void {
  countClosedConnection("slow_consumer");
  log.warn("Slow consumer closed", {
    transport,
    remote,
    queued_bytes: queued,
    max_queued_bytes: max,
  });
}
