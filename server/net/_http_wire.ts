/** A raw HTTP/1.1 reader for tests that send several requests on one TCP connection. */
import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { within } from "./_test_util.ts";

/** One response read off the wire. */
export interface WireResponse {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Reads responses in order from a socket; each must carry `Content-Length`. */
export class WireReader {
  #buf = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | null = null;

  constructor(socket: Socket) {
    socket.on("data", (c: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, c]);
      this.#wake?.();
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      this.#closed = true;
      this.#wake?.();
    });
  }

  /** True once the server closed the connection. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The next response; rejects when the connection closes first or after `timeoutMs`. */
  next(timeoutMs = 5000): Promise<WireResponse> {
    return within(this.#next(), "an HTTP response", timeoutMs);
  }

  async #next(): Promise<WireResponse> {
    for (;;) {
      const parsed = this.#take();
      if (parsed !== null) return parsed;
      if (this.#closed) {
        throw new Error(`Connection closed before a full response (${this.#buf.length} B left)`);
      }
      await new Promise<void>((resolve) => this.#wake = resolve);
      this.#wake = null;
    }
  }

  #take(): WireResponse | null {
    const end = this.#buf.indexOf("\r\n\r\n");
    if (end < 0) return null;
    const [statusLine, ...lines] = this.#buf.subarray(0, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"]);
    if (!Number.isInteger(length)) throw new Error(`No Content-Length in: ${statusLine}`);
    if (this.#buf.length < end + 4 + length) return null;
    const body = this.#buf.subarray(end + 4, end + 4 + length).toString("utf8");
    this.#buf = this.#buf.subarray(end + 4 + length);
    return { status: Number(statusLine.split(" ")[1]), headers, body };
  }
}

/** A request line, headers and optional body, ready to write. */
export function wireRequest(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): string {
  const all: Record<string, string> = { Host: "127.0.0.1", ...headers };
  if (body !== undefined) {
    all["Content-Type"] ??= "application/json";
    all["Content-Length"] = String(Buffer.byteLength(body));
  }
  const head = Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return `${method} ${path} HTTP/1.1\r\n${head}\r\n${body ?? ""}`;
}
