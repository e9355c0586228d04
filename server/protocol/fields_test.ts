import assert from "node:assert/strict";
import { ProtocolError } from "./errors.ts";
import { Fields, idItem, isValidId, readPaging, unknownField } from "./fields.ts";

function failure(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error("Expected a ProtocolError, got none");
}

Deno.test("isValidId accepts 1–64 letters, digits, _ . - and nothing else (spec 6.2)", () => {
  const table: [unknown, boolean][] = [
    ["a", true],
    ["018f9c3e-7b1a-7cc0-9a6e-1f2b3c4d5e6f", true],
    ["g_ab12cd34", true],
    ["A.b-C_9", true],
    ["x".repeat(64), true],
    ["x".repeat(65), false],
    ["", false],
    ["a b", false],
    ["a/b", false],
    ["中", false],
    ["a\n", false],
    [5, false],
    [null, false],
  ];
  for (const [value, ok] of table) assert.equal(isValidId(value), ok, JSON.stringify(value));
});

Deno.test("optional fields treat null like an absent field", () => {
  const f = new Fields({ a: null, b: null, c: null });
  assert.equal(f.optString("a", { max: 5 }), null);
  assert.equal(f.optInt("b", 0, 9), null);
  assert.equal(f.bool("c", true), true);
  assert.equal(f.has("a"), false);
});

Deno.test("fields inherited from Object.prototype are absent", () => {
  const f = new Fields(JSON.parse('{"v":1}'));
  assert.equal(f.raw("toString"), undefined);
  assert.equal(f.raw("constructor"), undefined);
  assert.equal(failure(() => f.string("toString", { max: 9 })).code, "bad_request");
});

Deno.test("errors name the full path of the bad field", () => {
  const f = new Fields({ to: { kind: "endpoint", id: "a b" }, list: [1] });
  assert.match(failure(() => f.object("to").id("id")).message, /^字段不合法：to\.id /);
  assert.match(failure(() => f.array("list", 5, idItem)).message, /^字段不合法：list\[0\] /);
  assert.match(failure(() => f.int("missing", 0, 1)).message, /^字段不合法：missing 缺少$/);
});

Deno.test("string bounds count characters, not UTF-16 units", () => {
  const f = new Fields({ emoji: "😀😀", long: "😀😀😀" });
  assert.equal(f.string("emoji", { max: 2 }), "😀😀");
  assert.equal(failure(() => f.string("long", { max: 2 })).code, "bad_request");
  assert.equal(failure(() => f.string("emoji", { min: 3, max: 9 })).code, "bad_request");
});

Deno.test("integers must be safe integers inside the range", () => {
  const f = new Fields({ ok: 5, frac: 5.5, big: 2 ** 53, str: "5", low: -1 });
  assert.equal(f.int("ok", 0, 5), 5);
  for (const key of ["frac", "big", "str", "low"]) {
    assert.equal(failure(() => f.int(key, 0, Number.MAX_SAFE_INTEGER)).code, "bad_request", key);
  }
});

Deno.test("an over-long array fails with the requested code", () => {
  const f = new Fields({ members: [{}, {}, {}] });
  const error = failure(() => f.array("members", 2, (v) => v, "group_full"));
  assert.equal(error.code, "group_full");
  assert.match(error.message, /^超过成员上限：members 最多 2 项$/);
});

Deno.test("paging defaults to an empty cursor and 100 items, at most 200 (spec 6.4)", () => {
  assert.deepEqual(readPaging(new Fields({})), { cursor: "", limit: 100 });
  assert.deepEqual(readPaging(new Fields({ cursor: "c", limit: 200 })), {
    cursor: "c",
    limit: 200,
  });
  assert.equal(failure(() => readPaging(new Fields({ limit: 201 }))).code, "bad_request");
});

Deno.test("unknownField() names the first key outside the shape, at any depth", () => {
  const shape = { to: { kind: true, id: true }, meta: true } as const;
  assert.equal(
    unknownField({ to: { kind: "endpoint", id: "b" }, meta: { x: { y: 1 } } }, shape),
    null,
  );
  assert.equal(unknownField({ to: { kind: "endpoint", extra: 1 } }, shape), "to.extra");
  assert.equal(unknownField({ tO: {} }, shape), "tO");
  assert.equal(unknownField({ to: "not an object" }, shape), null, "left to the parser");
  assert.equal(unknownField({ constructor: 1 }, shape), "constructor");
});
