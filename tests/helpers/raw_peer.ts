// A raw TCP peer for the fuzz test: writes bytes exactly as given (no client library in between),
// in stages that each wait for the server's answer to the previous one, half-closes, and collects
// whatever the server answers until it closes or a deadline passes.
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { connect as tlsConnect } from "node:tls";

/** What came back from one raw exchange. */
export interface RawReply {
  /** Every byte the server sent. */
  bytes: Uint8Array;
  /** True when the server closed (or reset) the connection before the deadline. */
  closed: boolean;
  /** True when the connection was refused: nothing listens on the port. */
  refused: boolean;
}

/** Options of {@linkcode rawExchange}. */
export interface RawExchangeOptions {
  /** How long to wait for the server to close, from the connect; default 5000 ms. */
  deadlineMs?: number;
  /** Speak TLS first (any certificate is accepted), then write the stages inside it. */
  tls?: boolean;
  /**
   * Half-close only once the server had its say: `lingerMs` after the first reply byte that
   * follows the last write, or after `silentMs` without one. A login needs this: a FIN sent
   * with the CONNECT closes the connection before the password is checked. A stage the server
   * does not answer within `stageMs` is followed by the next one all the same.
   */
  settle?: { silentMs: number; lingerMs: number; stageMs: number };
}

const HEADER_END = Buffer.from("\r\n\r\n");
const HTTP = Buffer.from("HTTP/");

/**
 * Connects to 127.0.0.1:`port` and writes `stages[0]`; each later stage is written once the
 * server answered the one before (for an HTTP answer: its whole header block), or after a silence
 * of `settle.stageMs` (default 1000 ms). After the last stage it half-closes (see `settle`) and
 * resolves when the server closes, or at the deadline (then the socket is destroyed). Never
 * rejects.
 *
 * @example
 * const r = await rawExchange(port, [[new TextEncoder().encode("GET /healthz HTTP/1.0\r\n\r\n")]]);
 */
export function rawExchange(
  port: number,
  stages: Uint8Array[][],
  opts: RawExchangeOptions = {},
): Promise<RawReply> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let stage = 0;
    let receivedAtWrite = 0;
    let settleTimer: ReturnType<typeof setTimeout> | undefined;
    let replied = false;
    let refused = false;
    const socket = opts.tls
      ? tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false })
      : connect({ host: "127.0.0.1", port, noDelay: true });
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      clearTimeout(settleTimer);
      socket.destroy();
      resolve({ bytes: Buffer.concat(chunks, received), closed, refused });
    };
    const timer = setTimeout(() => finish(false), opts.deadlineMs ?? 5000);
    const silentMs = opts.settle?.silentMs ?? 200;
    const stageMs = opts.settle?.stageMs ?? 1000;
    const writeStage = () => {
      clearTimeout(settleTimer);
      for (const p of stages[stage] ?? []) socket.write(p);
      stage++;
      receivedAtWrite = received;
      if (stage < stages.length) settleTimer = setTimeout(writeStage, stageMs);
      else if (opts.settle === undefined) socket.end();
      else settleTimer = setTimeout(() => socket.end(), silentMs);
    };
    const answered = (): boolean => {
      if (received === receivedAtWrite) return false;
      const all = Buffer.concat(chunks, received);
      const reply = all.subarray(receivedAtWrite);
      return !reply.subarray(0, HTTP.length).equals(HTTP) || reply.includes(HEADER_END);
    };
    socket.on(opts.tls ? "secureConnect" : "connect", writeStage);
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      received += d.length;
      if (stage < stages.length) {
        if (answered()) writeStage();
        return;
      }
      if (replied || opts.settle === undefined || received === receivedAtWrite) return;
      replied = true;
      clearTimeout(settleTimer);
      settleTimer = setTimeout(() => socket.end(), opts.settle.lingerMs);
    });
    // A reset or a write after the server closed: the server ended the exchange.
    socket.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") refused = true;
    });
    socket.on("close", () => finish(true));
  });
}
