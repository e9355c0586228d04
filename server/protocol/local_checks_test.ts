import assert from "node:assert/strict";
import { TEST_LIMITS } from "./fixtures.ts";
import { checkBodySize, checkFrameSize } from "./local_checks.ts";

const MAX_FRAME = TEST_LIMITS.max_frame_bytes;
const MAX_BODY = TEST_LIMITS.max_body_bytes;

// spec 9 "本地检查", spec 6.10 frame_too_large.
Deno.test("checkFrameSize refuses a frame over max_frame_bytes with frame_too_large", () => {
  const table: [Uint8Array | number, string | null][] = [
    [0, null],
    [MAX_FRAME, null],
    [new Uint8Array(MAX_FRAME), null],
    [MAX_FRAME + 1, "frame_too_large"],
    [new Uint8Array(MAX_FRAME + 1), "frame_too_large"],
  ];
  for (const [frame, code] of table) {
    assert.equal(checkFrameSize(frame, MAX_FRAME)?.code ?? null, code, String(frame));
  }
});

Deno.test("checkBodySize refuses a body over max_body_bytes with body_too_large", () => {
  assert.equal(checkBodySize(MAX_BODY, MAX_BODY), null);
  assert.equal(checkBodySize(new Uint8Array(MAX_BODY), MAX_BODY), null);
  const error = checkBodySize(MAX_BODY + 1, MAX_BODY);
  assert.equal(error?.code, "body_too_large");
  assert.match(error?.message ?? "", /^正文超限：262145 字节，上限 262144$/);
});
