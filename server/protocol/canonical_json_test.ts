import assert from "node:assert/strict";
import { canonicalJson, jsonByteSizeWithin } from "./canonical_json.ts";
import { seededRandom } from "./fixtures.ts";
import type { JsonValue } from "./frames.ts";

Deno.test("canonicalJson sorts object keys at every level and keeps array order", () => {
  const table: [JsonValue, string][] = [
    [{ b: 1, a: { d: [], c: null } }, '{"a":{"c":null,"d":[]},"b":1}'],
    [[3, { z: true, y: false }, "x"], '[3,{"y":false,"z":true},"x"]'],
    [{}, "{}"],
    [[], "[]"],
    ["中<>&", '"中<>&"'],
    [JSON.parse('{"__proto__":2,"":1}'), '{"":1,"__proto__":2}'],
    [null, "null"],
  ];
  for (const [value, expected] of table) assert.equal(canonicalJson(value), expected);
});

Deno.test("canonicalJson gives equal text for equal objects written in any key order", () => {
  const a = JSON.parse('{"x":{"q":1,"p":[{"n":2,"m":3}]},"k":"v"}');
  const b = JSON.parse('{"k":"v","x":{"p":[{"m":3,"n":2}],"q":1}}');
  assert.equal(canonicalJson(a), canonicalJson(b));
});

Deno.test("canonicalJson handles nesting far deeper than the call stack", () => {
  const deep = JSON.parse("[".repeat(100000) + "]".repeat(100000));
  assert.equal(canonicalJson(deep).length, 200000);
});

function randomJson(rand: () => number, depth: number): JsonValue {
  const pick = Math.floor(rand() * (depth > 3 ? 4 : 6));
  if (pick === 0) return null;
  if (pick === 1) return rand() < 0.5;
  if (pick === 2) return Math.floor(rand() * 1e9) / (rand() < 0.5 ? 1 : 7);
  if (pick === 3) return ["", "a", "中文", "😀", '"\\\n', "\ud800", "<>&"][Math.floor(rand() * 7)];
  if (pick === 4) {
    return Array.from({ length: Math.floor(rand() * 4) }, () => randomJson(rand, depth + 1));
  }
  const obj: Record<string, JsonValue> = {};
  for (let i = 0; i < Math.floor(rand() * 4); i++) obj[`k${i}中`] = randomJson(rand, depth + 1);
  return obj;
}

Deno.test("jsonByteSizeWithin equals the UTF-8 size of JSON.stringify for random values", () => {
  const rand = seededRandom(7);
  const encoder = new TextEncoder();
  for (let i = 0; i < 500; i++) {
    const value = randomJson(rand, 0);
    const size = encoder.encode(JSON.stringify(value)).length;
    assert.equal(jsonByteSizeWithin(value, size), size);
    assert.equal(jsonByteSizeWithin(value, size - 1), null);
  }
});

Deno.test("jsonByteSizeWithin stops at the limit on deeply nested values", () => {
  const deep = JSON.parse("[".repeat(100000) + "]".repeat(100000));
  assert.equal(jsonByteSizeWithin(deep, 4096), null);
  assert.equal(jsonByteSizeWithin(deep, 200000), 200000);
});
