import assert from "node:assert/strict";
import { isErrorCode, ProtocolError } from "./errors.ts";
import {
  encodeWire,
  GOOD_REQUESTS,
  REQUEST_FIELD_NAMES,
  seededRandom,
  TEST_LIMITS,
} from "./fixtures.ts";
import { parseRequest, type ParseResult, REQUEST_TYPES } from "./parse.ts";

const rand = seededRandom(20261101);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(items: readonly T[]): T => items[int(items.length)];

const FIELD_NAMES = [...REQUEST_FIELD_NAMES, "__proto__", "toString"];
const STRINGS = [
  "",
  "a",
  "b",
  "endpoint",
  "group",
  "utf8",
  "base64",
  "aGk=",
  "aGk",
  "中文",
  "😀",
  "\ud800",
  "nst_12345678",
  "a b",
  "x".repeat(65),
  "x".repeat(300),
  "12345678",
];
const NUMBERS = [0, 1, -1, 1.5, 100, 200, 201, 1023, 1024, 2 ** 53, -0, 1e308, 86400];

function randomValue(depth: number): unknown {
  switch (int(depth > 2 ? 4 : 7)) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return pick(NUMBERS);
    case 3:
      return pick(STRINGS);
    case 4:
      return Array.from({ length: int(4) }, () => randomValue(depth + 1));
    default:
      return randomObject(depth + 1);
  }
}

// An own property even for "__proto__", as JSON.parse would make it.
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function randomObject(depth: number): Record<string, unknown> {
  const obj: Record<string, unknown> = {};
  for (let i = 0; i < int(6); i++) setOwn(obj, pick(FIELD_NAMES), randomValue(depth));
  return obj;
}

function assertWellFormed(result: ParseResult): void {
  if (result.ok) {
    assert.equal(result.frame.v, 1);
    assert.ok(REQUEST_TYPES.includes(result.frame.type));
  } else {
    assert.ok(result.error instanceof ProtocolError);
    assert.ok(isErrorCode(result.error.code));
    assert.ok(result.rid === null || typeof result.rid === "string");
  }
}

Deno.test("1,000 random byte payloads never make parseRequest throw", () => {
  const alphabet = [...new TextEncoder().encode('{}[]":,1vtypeid\\ ')];
  for (let i = 0; i < 1000; i++) {
    const bytes = new Uint8Array(int(120)).map(() => rand() < 0.5 ? pick(alphabet) : int(256));
    const result = parseRequest(bytes, TEST_LIMITS);
    assertWellFormed(result);
  }
});

Deno.test("1,000 random JSON objects never make parseRequest throw", () => {
  let failures = 0;
  for (let i = 0; i < 1000; i++) {
    const wire = randomObject(0);
    wire.v = pick([1, 1, 1, 2, "1", null]);
    wire.type = pick([...REQUEST_TYPES, "resp", "nope", 3]);
    wire.rid = pick(["r1", "", 7, "x".repeat(65)]);
    const result = parseRequest(encodeWire(wire), TEST_LIMITS);
    assertWellFormed(result);
    if (!result.ok) failures++;
  }
  assert.ok(failures > 0);
});

Deno.test("1,000 mutations of good fixtures never make parseRequest throw", () => {
  const fixtures = Object.values(GOOD_REQUESTS).filter((f) => JSON.stringify(f.wire).length < 4096);
  const outcomes = { ok: 0, failed: 0 };
  for (let i = 0; i < 1000; i++) {
    const wire = structuredClone(pick(fixtures).wire);
    let target: Record<string, unknown> = wire;
    const nested = Object.keys(wire).filter((k) => typeof wire[k] === "object" && wire[k] !== null);
    if (nested.length > 0 && rand() < 0.4) target = wire[pick(nested)] as Record<string, unknown>;
    const keys = Object.keys(target).filter((k) => !["v", "type", "rid"].includes(k));
    const key = keys.length > 0 && rand() < 0.8 ? pick(keys) : pick(FIELD_NAMES);
    if (rand() < 0.2) delete target[key];
    else setOwn(target, key, randomValue(1));
    const result = parseRequest(encodeWire(wire), TEST_LIMITS);
    assertWellFormed(result);
    outcomes[result.ok ? "ok" : "failed"]++;
  }
  assert.ok(outcomes.ok > 0 && outcomes.failed > 0, JSON.stringify(outcomes));
});
