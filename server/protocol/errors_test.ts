import assert from "node:assert/strict";
import { ERROR_CODES, errorInfo, isErrorCode, ProtocolError, toProtocolError } from "./errors.ts";

// spec 6.10, in table order.
const SPEC_CODES = [
  "bad_request",
  "not_ready",
  "unauthorized",
  "forbidden",
  "not_found",
  "invalid_target",
  "conflict",
  "id_taken",
  "body_too_large",
  "meta_too_large",
  "frame_too_large",
  "response_too_large",
  "talk_password_required",
  "talk_password_invalid",
  "rate_limited",
  "not_member",
  "owner_cannot_leave",
  "group_full",
  "quota_exceeded",
  "endpoint_disabled",
  "registration_closed",
  "registration_code_invalid",
  "busy",
];

Deno.test("the catalogue holds exactly the codes of spec 6.10", () => {
  assert.deepEqual([...ERROR_CODES], SPEC_CODES);
});

Deno.test("every code has an HTTP error status and a message", () => {
  for (const code of ERROR_CODES) {
    const { status, message } = errorInfo(code);
    assert.ok(status >= 400 && status <= 599, code);
    assert.ok(message.length > 0, code);
    assert.ok(!message.endsWith("。") && !message.endsWith("."), code);
  }
});

Deno.test("HTTP statuses follow spec 6.9 and the agreed table", () => {
  const expected: Record<string, number> = {
    bad_request: 400,
    unauthorized: 401,
    forbidden: 403,
    registration_closed: 403,
    registration_code_invalid: 403,
    not_member: 403,
    owner_cannot_leave: 403,
    not_found: 404,
    conflict: 409,
    id_taken: 409,
    body_too_large: 413,
    meta_too_large: 413,
    rate_limited: 429,
    quota_exceeded: 429,
    busy: 503,
  };
  for (const [code, status] of Object.entries(expected)) {
    assert.ok(isErrorCode(code));
    assert.equal(errorInfo(code).status, status, code);
  }
});

Deno.test("the talk password message is the spec's text", () => {
  assert.equal(errorInfo("talk_password_required").message, "需要对话密码");
});

Deno.test("a ProtocolError defaults to the catalogue message and keeps its data", () => {
  const plain = new ProtocolError("not_member");
  assert.equal(plain.code, "not_member");
  assert.equal(plain.message, "不是群成员");
  assert.equal(plain.data, undefined);
  assert.ok(plain instanceof Error);
  const detailed = new ProtocolError("bad_request", "字段不合法：id", { field: "id" });
  assert.equal(detailed.message, "字段不合法：id");
  assert.deepEqual(detailed.data, { field: "id" });
});

Deno.test("isErrorCode accepts only catalogue codes", () => {
  const table: [unknown, boolean][] = [
    ["busy", true],
    ["too_large", false],
    ["toString", false],
    [1, false],
    [null, false],
  ];
  for (const [value, expected] of table) assert.equal(isErrorCode(value), expected, String(value));
});

Deno.test("toProtocolError keeps protocol errors and turns anything else into busy", () => {
  const known = new ProtocolError("conflict");
  assert.equal(toProtocolError(known), known);
  for (const other of [new TypeError("x is undefined"), "boom", null]) {
    const mapped = toProtocolError(other);
    assert.equal(mapped.code, "busy");
    assert.equal(mapped.message, "服务器忙，可重试");
  }
});
