import assert from "node:assert/strict";
import {
  assertFails,
  BAD_PAYLOADS,
  BAD_REQUESTS,
  encodeWire,
  GOOD_REQUESTS,
  TEST_LIMITS,
  wireOf,
} from "./fixtures.ts";
import { isRequestType, parseRequest, REQUEST_TYPES } from "./parse.ts";

// spec 6: a UTF-8 JSON object with v 1, a known type and a rid.
Deno.test("malformed payloads, wrong versions, unknown types and bad rids are bad_request", () => {
  for (const [name, fixture] of Object.entries(BAD_PAYLOADS)) assertFails(name, fixture);
});

Deno.test("REQUEST_TYPES lists the 24 request types of spec 6", () => {
  assert.equal(REQUEST_TYPES.length, 24);
  assert.equal(new Set(REQUEST_TYPES).size, 24);
  assert.ok(REQUEST_TYPES.every(isRequestType));
  assert.ok(!isRequestType("resp") && !isRequestType("hasOwnProperty"));
});

Deno.test("every request type has good and bad fixtures in the catalogue", () => {
  const goodTypes = new Set(Object.values(GOOD_REQUESTS).map((f) => f.wire.type));
  const badTypes = new Set(Object.values(BAD_REQUESTS).map((f) => f.wire.type));
  for (const type of REQUEST_TYPES) {
    assert.ok(goodTypes.has(type), `no good fixture for ${type}`);
    assert.ok(badTypes.has(type), `no bad fixture for ${type}`);
  }
});

Deno.test("a failure after the envelope carries the rid so the server can answer", () => {
  const result = parseRequest(encodeWire({ ...wireOf("recall"), rid: "abc" }), TEST_LIMITS);
  assert.ok(!result.ok);
  assert.equal(result.rid, "abc");
  assert.equal(result.error.code, "bad_request");
  assert.match(result.error.message, /^字段不合法：id /);
});

Deno.test("a rid of 64 characters, emoji counted once, is accepted", () => {
  const rid = "😀".repeat(64);
  const result = parseRequest(encodeWire({ v: 1, type: "self.get", rid }), TEST_LIMITS);
  assert.ok(result.ok);
  assert.equal(result.frame.rid, rid);
});

Deno.test("a payload with a UTF-8 byte order mark still parses", () => {
  const payload = new Uint8Array([0xef, 0xbb, 0xbf, ...encodeWire(wireOf("self.get"))]);
  const result = parseRequest(payload, TEST_LIMITS);
  assert.ok(result.ok);
  assert.deepEqual(result.frame, { v: 1, type: "self.get", rid: "r1" });
});

Deno.test("the last of duplicate keys wins, as in JSON.parse", () => {
  const payload = new TextEncoder().encode('{"v":2,"v":1,"type":"self.get","rid":"r1"}');
  const result = parseRequest(payload, TEST_LIMITS);
  assert.ok(result.ok);
  assert.equal(result.frame.type, "self.get");
});

Deno.test("the parsed frame is a fresh object that unknown fields do not reach", () => {
  const result = parseRequest(encodeWire(wireOf("recall", { id: "m1", x: 1 })), TEST_LIMITS);
  assert.ok(result.ok);
  assert.deepEqual(Object.keys(result.frame).sort(), ["id", "rid", "type", "v"]);
});
