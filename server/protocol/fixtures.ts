/**
 * The catalogue of named protocol fixtures (spec 6), shared by the codec tests here and by the
 * server tests (STYLE: one catalogue serves both). A server test publishes
 * `encodeWire(GOOD_REQUESTS.sendMinimal.wire)` and expects success, or publishes a
 * `BAD_REQUESTS` entry and expects a `resp` with its `code`.
 *
 * @example
 * ```ts
 * import { BAD_REQUESTS, encodeWire } from "../protocol/fixtures.ts";
 * for (const [name, { wire, code }] of Object.entries(BAD_REQUESTS)) {
 *   client.publish(up, encodeWire(wire));
 *   assert.equal((await nextResp()).error.code, code, name);
 * }
 * ```
 */
import assert from "node:assert/strict";
import { ProtocolError } from "./errors.ts";
import {
  type BadPayload,
  type BadRequest,
  encodeWire,
  type GoodRequest,
  TEST_LIMITS,
  wireOf,
} from "./fixtures_base.ts";
import type { RequestType } from "./frames.ts";
import { BAD_OTHER, GOOD_OTHER } from "./fixtures_requests.ts";
import { BAD_SEND, GOOD_SEND } from "./fixtures_send.ts";
import { parseRequest } from "./parse.ts";

export * from "./fixtures_base.ts";
export { DOWNLINK_FRAMES, type DownlinkFixture } from "./fixtures_downlink.ts";
export { BAD_OTHER, GOOD_OTHER } from "./fixtures_requests.ts";
export { BAD_SEND, GOOD_SEND } from "./fixtures_send.ts";

/** Every request that parses, by name. */
export const GOOD_REQUESTS: Readonly<Record<string, GoodRequest>> = { ...GOOD_SEND, ...GOOD_OTHER };

/** Every request that fails a field check, by name, with its expected code. */
export const BAD_REQUESTS: Readonly<Record<string, BadRequest>> = { ...BAD_SEND, ...BAD_OTHER };

const encoder = new TextEncoder();

/** Payloads rejected before the frame type is known (spec 6: UTF-8 JSON object, `v` 1, `rid`). */
export const BAD_PAYLOADS: Readonly<Record<string, BadPayload>> = {
  empty: { payload: new Uint8Array(), code: "bad_request", rid: null },
  notUtf8: {
    payload: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    code: "bad_request",
    rid: null,
  },
  truncatedJson: {
    payload: encoder.encode('{"v":1,"type":"hello"'),
    code: "bad_request",
    rid: null,
  },
  jsonArray: { payload: encoder.encode("[]"), code: "bad_request", rid: null },
  jsonString: { payload: encoder.encode('"hello"'), code: "bad_request", rid: null },
  jsonNull: { payload: encoder.encode("null"), code: "bad_request", rid: null },
  jsonNumber: { payload: encoder.encode("1"), code: "bad_request", rid: null },
  trailingGarbage: { payload: encoder.encode('{"v":1}x'), code: "bad_request", rid: null },
  versionTwo: { payload: encodeWire({ ...wireOf("hello"), v: 2 }), code: "bad_request", rid: "r1" },
  versionString: {
    payload: encodeWire({ ...wireOf("hello"), v: "1" }),
    code: "bad_request",
    rid: "r1",
  },
  versionMissing: {
    payload: encodeWire({ type: "hello", rid: "r1" }),
    code: "bad_request",
    rid: "r1",
  },
  typeUnknown: { payload: encodeWire(wireOf("subscribe")), code: "bad_request", rid: "r1" },
  typeFromPrototype: { payload: encodeWire(wireOf("toString")), code: "bad_request", rid: "r1" },
  typeDownlink: { payload: encodeWire(wireOf("resp")), code: "bad_request", rid: "r1" },
  typeMissing: { payload: encodeWire({ v: 1, rid: "r1" }), code: "bad_request", rid: "r1" },
  typeNumber: { payload: encodeWire({ v: 1, type: 3, rid: "r1" }), code: "bad_request", rid: "r1" },
  ridMissing: { payload: encodeWire({ v: 1, type: "hello" }), code: "bad_request", rid: null },
  ridEmpty: {
    payload: encodeWire({ v: 1, type: "hello", rid: "" }),
    code: "bad_request",
    rid: null,
  },
  ridNumber: {
    payload: encodeWire({ v: 1, type: "hello", rid: 1 }),
    code: "bad_request",
    rid: null,
  },
  ridTooLong: {
    payload: encodeWire({ v: 1, type: "hello", rid: "r".repeat(65) }),
    code: "bad_request",
    rid: null,
  },
};

/** The fixtures of one request type, by name. */
export function fixturesOf<F extends GoodRequest | BadRequest>(
  table: Readonly<Record<string, F>>,
  types: readonly RequestType[],
): [string, F][] {
  return Object.entries(table).filter(([, f]) => types.includes(f.wire.type as RequestType));
}

/** Asserts that a good fixture parses to exactly its expected frame. */
export function assertParses(name: string, fixture: GoodRequest, limits = TEST_LIMITS): void {
  const result = parseRequest(encodeWire(fixture.wire), limits);
  if (!result.ok) assert.fail(`${name}: ${result.error.message}`);
  assert.deepEqual(result.frame, fixture.frame, name);
}

/** Asserts that a bad fixture fails with its code and `rid`, and a message naming the field. */
export function assertFails(
  name: string,
  fixture: BadRequest | BadPayload,
  limits = TEST_LIMITS,
): void {
  const payload = "payload" in fixture ? fixture.payload : encodeWire(fixture.wire);
  const result = parseRequest(payload, limits);
  if (result.ok) assert.fail(`${name} parsed but should fail with ${fixture.code}`);
  assert.ok(result.error instanceof ProtocolError, name);
  assert.equal(result.error.code, fixture.code, `${name}: ${result.error.message}`);
  assert.equal(result.rid, fixture.rid, name);
  assert.ok(result.error.message.length > 0, name);
}
