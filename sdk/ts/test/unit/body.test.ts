import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkMeta,
  DEFAULT_LIMITS,
  encodeBody,
  encodeFrame,
  fromBase64,
  toBase64,
} from "../../src/body.ts";
import { codeOf } from "../helpers/src_errors.ts";

const MAX = DEFAULT_LIMITS.maxBodyBytes;

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return codeOf(err);
  }
  return "none";
}

test("the spec defaults apply before the first handshake: 262144 / 4096 / 786432", () => {
  assert.deepEqual({ ...DEFAULT_LIMITS }, {
    maxBodyBytes: 262144,
    maxMetaBytes: 4096,
    maxFrameBytes: 786432,
  });
});

test("body_too_large counts UTF-8 bytes of text, exactly at the limit passes (spec 6.2, 9)", () => {
  assert.equal(code(() => encodeBody("a".repeat(MAX), undefined, MAX)), "none");
  assert.equal(code(() => encodeBody("a".repeat(MAX + 1), undefined, MAX)), "body_too_large");
  // "é" is 2 bytes: half the characters already reach the limit.
  assert.equal(code(() => encodeBody("é".repeat(MAX / 2), undefined, MAX)), "none");
  assert.equal(code(() => encodeBody("é".repeat(MAX / 2) + "a", undefined, MAX)), "body_too_large");
});

test("bytes go as padded base64 and count decoded bytes", () => {
  const bytes = new Uint8Array(MAX).map((_, i) => i % 251);
  const wire = encodeBody(bytes, "application/x-test", MAX);
  assert.equal(wire.enc, "base64");
  assert.equal(wire.content_type, "application/x-test");
  assert.equal(wire.data.length % 4, 0);
  assert.deepEqual(fromBase64(wire.data), bytes);
  assert.equal(toBase64(new Uint8Array([1, 2])), "AQI=");
  assert.equal(code(() => encodeBody(new Uint8Array(MAX + 1), undefined, MAX)), "body_too_large");
});

test("frame_too_large catches frames that JSON escaping blows up past max_frame_bytes", () => {
  // 262144 control characters fit the body limit but serialize as \u0001 (6 bytes each).
  const body = encodeBody("\u0001".repeat(MAX), undefined, MAX);
  const frame = { v: 1, type: "send", rid: "1", id: "x", body };
  assert.equal(code(() => encodeFrame(frame, DEFAULT_LIMITS.maxFrameBytes)), "frame_too_large");
  assert.equal(code(() => encodeFrame({ v: 1, type: "send" }, 100)), "none");
});

test("frames keep non-ASCII and HTML characters unescaped (spec 6)", () => {
  assert.equal(encodeFrame({ data: "门口 <&> 😀" }, 1000), '{"data":"门口 <&> 😀"}');
});

test("meta_too_large and a non-object meta are refused locally", () => {
  assert.equal(code(() => checkMeta({ k: "v".repeat(4100) }, 4096)), "meta_too_large");
  assert.equal(code(() => checkMeta({ k: "v" }, 4096)), "none");
  assert.equal(code(() => checkMeta([] as unknown, 4096)), "bad_request");
});

test("unpaired surrogates are refused as the server would (bad_request)", () => {
  assert.equal(code(() => encodeBody("a\uD800b", undefined, MAX)), "bad_request");
});
