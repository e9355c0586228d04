/**
 * Size checks an SDK makes before publishing (spec 9 "本地检查"), kept here so the server and
 * the TypeScript SDK share one definition.
 */
import { ProtocolError } from "./errors.ts";

/**
 * Returns `frame_too_large` when an encoded frame exceeds the `max_frame_bytes` announced in
 * the `hello` response, else null. The server drops the connection on an oversized MQTT packet
 * without a `resp`, so an SDK that retried such a frame would loop forever (spec 6.10, 9).
 *
 * @example
 * ```ts
 * const error = checkFrameSize(encodeFrame(frame), hello.max_frame_bytes);
 * if (error) throw error;
 * ```
 */
export function checkFrameSize(
  frame: Uint8Array | number,
  maxFrameBytes: number,
): ProtocolError | null {
  const size = typeof frame === "number" ? frame : frame.length;
  if (size <= maxFrameBytes) return null;
  return new ProtocolError(
    "frame_too_large",
    `整帧超过 max_frame_bytes：${size} 字节，上限 ${maxFrameBytes}`,
  );
}

/**
 * Returns `body_too_large` when decoded body bytes exceed `max_body_bytes`, else null; the
 * same rule the server applies (spec 6.2, 9).
 */
export function checkBodySize(
  body: Uint8Array | number,
  maxBodyBytes: number,
): ProtocolError | null {
  const size = typeof body === "number" ? body : body.length;
  if (size <= maxBodyBytes) return null;
  return new ProtocolError("body_too_large", `正文超限：${size} 字节，上限 ${maxBodyBytes}`);
}
