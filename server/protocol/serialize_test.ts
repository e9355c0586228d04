import assert from "node:assert/strict";
import { ProtocolError } from "./errors.ts";
import { DOWNLINK_FRAMES } from "./fixtures.ts";
import {
  encodeFrame,
  encodeResp,
  errorBody,
  errResp,
  frameSize,
  httpError,
  okResp,
} from "./serialize.ts";

const decoder = new TextDecoder();

// spec 6: never escape non-ASCII or HTML characters.
Deno.test("encodeFrame writes Chinese, emoji and <>& as raw UTF-8 bytes", () => {
  const text = "中文<>&😀";
  const bytes = encodeFrame({ data: text });
  assert.equal(decoder.decode(bytes), `{"data":"${text}"}`);
  const raw = new TextEncoder().encode(text);
  const at = bytes.indexOf(raw[0]);
  assert.deepEqual(bytes.subarray(at, at + raw.length), raw);
  assert.equal(bytes.length, 11 + raw.length);
  assert.ok(!decoder.decode(bytes).includes("\\u"));
  assert.deepEqual(JSON.parse(decoder.decode(bytes)), { data: text });
});

Deno.test("encodeFrame escapes only quotes, backslashes, controls and lone surrogates", () => {
  const table: [string, string][] = [
    ['"', '"\\""'],
    ["\\", '"\\\\"'],
    ["\n", '"\\n"'],
    ["\u0001", '"\\u0001"'],
    ["\ud800", '"\\ud800"'],
    ["\u2028/", '"\u2028/"'],
  ];
  for (const [value, json] of table) {
    assert.equal(decoder.decode(encodeFrame([value])), `[${json}]`);
  }
});

Deno.test("the downlink examples of spec 6 encode to the spec's exact text", () => {
  for (const [name, { frame, json }] of Object.entries(DOWNLINK_FRAMES)) {
    assert.equal(decoder.decode(encodeFrame(frame)), json, name);
    assert.equal(frameSize(frame), new TextEncoder().encode(json).length, name);
  }
});

Deno.test("frameSize counts UTF-8 bytes", () => {
  const frame = { s: "中文<>&😀", n: 1 };
  assert.equal(frameSize(frame), encodeFrame(frame).length);
});

Deno.test("okResp and errResp build the resp frames of spec 6", () => {
  assert.deepEqual(okResp("2", { id: "m1" }), {
    v: 1,
    type: "resp",
    rid: "2",
    ok: true,
    data: { id: "m1" },
  });
  assert.equal(
    decoder.decode(encodeFrame(errResp("1", "talk_password_required"))),
    DOWNLINK_FRAMES.respErr.json,
  );
});

Deno.test("errResp uses the catalogue message unless one is given", () => {
  const table: [ReturnType<typeof errResp>, object][] = [
    [errResp("r", "not_member"), { code: "not_member", message: "不是群成员" }],
    [errResp("r", "not_member", "不是 g1 的成员"), {
      code: "not_member",
      message: "不是 g1 的成员",
    }],
    [
      errResp("r", new ProtocolError("bad_request", "字段不合法：id 缺少")),
      { code: "bad_request", message: "字段不合法：id 缺少" },
    ],
    [
      errResp("r", new ProtocolError("busy", undefined, { retry_ms: 1000 })),
      { code: "busy", message: "服务器忙，可重试", data: { retry_ms: 1000 } },
    ],
  ];
  for (const [resp, error] of table) {
    assert.equal(resp.ok, false);
    assert.equal(resp.rid, "r");
    assert.deepEqual(resp.error, error);
  }
});

Deno.test("encodeResp replaces a response larger than the receiver allows (spec 7.5)", () => {
  const big = okResp("7", { items: "x".repeat(2000) });
  assert.deepEqual(encodeResp(big, null), encodeFrame(big));
  assert.deepEqual(encodeResp(big, 5000), encodeFrame(big));
  const replaced = JSON.parse(decoder.decode(encodeResp(big, 1024)));
  assert.equal(replaced.rid, "7");
  assert.equal(replaced.ok, false);
  assert.equal(replaced.error.code, "response_too_large");
});

Deno.test("httpError renders protocol errors with their status and anything else as busy", () => {
  assert.deepEqual(httpError(new ProtocolError("registration_closed")), {
    status: 403,
    body: { ok: false, error: { code: "registration_closed", message: "注册未开启" } },
  });
  assert.equal(httpError(new ProtocolError("id_taken")).status, 409);
  const internal = httpError(new Error("SQLITE_BUSY: database is locked"));
  assert.equal(internal.status, 503);
  assert.deepEqual(internal.body.error, errorBody("busy"));
  assert.ok(!JSON.stringify(internal).includes("SQLITE"));
});
