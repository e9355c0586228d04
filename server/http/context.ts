/** The per-request context handed to route handlers, and the JSON response helpers. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PeerInfo } from "../net/types.ts";
import type { HttpContext, Scope } from "./types.ts";

/**
 * An error with HTTP meaning. Thrown from a handler (or from `ctx.body`), the router answers with
 * its status and `{"ok":false,"error":{"code","message"}}`. The code comes from the spec's
 * catalogue (spec 6.10); the message is shown to the client.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.code = code;
  }
}

/**
 * Sends `value` as a JSON response. `JSON.stringify` leaves non-ASCII and HTML characters as they
 * are, as the spec asks. Responses are never cached: they carry live state.
 */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = new TextEncoder().encode(JSON.stringify(value));
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", body.byteLength);
  res.setHeader("Cache-Control", "no-store");
  // issue 28: every 429 says when to come back; a handler that knows better sets it first.
  if (status === 429 && !res.hasHeader("Retry-After")) res.setHeader("Retry-After", "1");
  res.end(body);
}

/** Sends the error shape shared with the MQTT `resp` frame (spec 6.9). */
export function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
): void {
  sendJson(res, status, { ok: false, error: { code, message } });
}

/**
 * Reads a request body of at most `limitBytes`. A declared Content-Length over the limit is
 * refused before anything is read. On refusal the response asks the client to close the
 * connection, so the unread rest of the body is not parsed as the next request.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Promise<Uint8Array> {
  const tooLarge = () => {
    res.setHeader("Connection", "close");
    return new HttpError(413, "bad_request", `Request body exceeds ${limitBytes} bytes`);
  };
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > limitBytes) return Promise.reject(tooLarge());

  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("close", onAbort);
    };
    const onData = (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > limitBytes) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const out = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.byteLength;
      }
      resolve(out);
    };
    const onAbort = () => {
      cleanup();
      reject(new HttpError(400, "bad_request", "Request body is incomplete"));
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onAbort);
    req.once("close", onAbort);
  });
}

/** Everything {@linkcode createContext} needs. */
export interface ContextParts {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  readonly peer: PeerInfo;
  readonly scopes: ReadonlySet<Scope>;
}

/** Builds the context of one request. */
export function createContext(parts: ContextParts): HttpContext {
  const { req, res } = parts;
  return {
    ...parts,
    body: (limitBytes) => readBody(req, res, limitBytes),
    json: (status, value) => sendJson(res, status, value),
    error: (status, code, message) => sendError(res, status, code, message),
  };
}
