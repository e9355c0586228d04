/** Message bodies on the wire and the local size checks of spec 9 ("本地检查"). */
import { NixMsgError } from "./errors.ts";

/** Limits used before the first handshake: the spec defaults (spec 6.1, 11.1). */
export const DEFAULT_LIMITS = Object.freeze({
  maxBodyBytes: 262_144,
  maxMetaBytes: 4096,
  maxFrameBytes: 786_432,
});

/** The `body` object of `send` and `msg` (spec 6.2). */
export interface WireBody {
  enc: "utf8" | "base64";
  content_type?: string;
  data: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/** Number of bytes of `text` in UTF-8. */
export function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

/** Standard, padded base64 of `bytes` (the server refuses unpadded base64, spec 6.2). */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

/** Decodes standard base64. */
export function fromBase64(data: string): Uint8Array {
  const binary = atob(data);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Decodes a received body: text for `utf8`, bytes for `base64`. */
export function decodeBody(body: WireBody): string | Uint8Array {
  return body.enc === "base64" ? fromBase64(body.data) : body.data;
}

/**
 * UTF-8 text of a received body, whatever its encoding.
 *
 * @example
 * ```ts
 * client.onMessage((msg) => console.log(bodyText(msg.body)));
 * ```
 */
export function bodyText(body: string | Uint8Array): string {
  return typeof body === "string" ? body : decoder.decode(body);
}

function wellFormed(text: string): boolean {
  // String.prototype.isWellFormed: Node 20, current browsers; the regex covers older engines.
  const s = text as string & { isWellFormed?: () => boolean };
  if (typeof s.isWellFormed === "function") return s.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/**
 * Builds the wire body: a string is sent as `utf8`, bytes as `base64`. Throws `body_too_large`
 * when the decoded size exceeds `maxBodyBytes`, exactly as the server would (spec 6.2, 9).
 *
 * @example
 * ```ts
 * encodeBody("hello", undefined, 262144); // { enc: "utf8", data: "hello" }
 * ```
 */
export function encodeBody(
  body: string | Uint8Array,
  contentType: string | undefined,
  maxBodyBytes: number,
): WireBody {
  let wire: WireBody;
  if (typeof body === "string") {
    if (!wellFormed(body)) {
      throw new NixMsgError("bad_request", "Body text contains an unpaired surrogate");
    }
    checkBodySize(utf8Length(body), maxBodyBytes);
    wire = { enc: "utf8", data: body };
  } else if (body instanceof Uint8Array) {
    checkBodySize(body.length, maxBodyBytes);
    wire = { enc: "base64", data: toBase64(body) };
  } else {
    throw new NixMsgError("bad_request", "Body must be a string or a Uint8Array");
  }
  if (contentType !== undefined && contentType !== "") {
    wire.content_type = contentType;
  }
  return wire;
}

/** Throws `body_too_large` when `size` decoded bytes exceed `maxBodyBytes` (spec 6.2, 9). */
export function checkBodySize(size: number, maxBodyBytes: number): void {
  if (size > maxBodyBytes) {
    throw new NixMsgError(
      "body_too_large",
      `Body is ${size} bytes, more than max_body_bytes ${maxBodyBytes}`,
    );
  }
}

/**
 * Serializes a frame and throws `frame_too_large` when it exceeds `maxFrameBytes`: the server
 * closes the connection on an oversized packet without a `resp`, so resending it after the
 * reconnect would loop forever (spec 6.10, 9). `JSON.stringify` does not escape non-ASCII or
 * HTML characters, as spec 6 requires.
 */
export function encodeFrame(frame: object, maxFrameBytes: number): string {
  const json = JSON.stringify(frame);
  const size = utf8Length(json);
  if (size > maxFrameBytes) {
    throw new NixMsgError(
      "frame_too_large",
      `Frame is ${size} bytes, more than max_frame_bytes ${maxFrameBytes}`,
    );
  }
  return json;
}

/** Throws `meta_too_large` when `meta` serializes to more than `maxMetaBytes` (spec 6.2). */
export function checkMeta(meta: unknown, maxMetaBytes: number): void {
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) {
    throw new NixMsgError("bad_request", "meta must be a JSON object");
  }
  const size = utf8Length(JSON.stringify(meta));
  if (size > maxMetaBytes) {
    throw new NixMsgError(
      "meta_too_large",
      `meta is ${size} bytes, more than max_meta_bytes ${maxMetaBytes}`,
    );
  }
}
