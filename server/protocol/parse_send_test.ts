import assert from "node:assert/strict";
import { ProtocolError } from "./errors.ts";
import {
  assertFails,
  assertParses,
  BAD_SEND,
  encodeWire,
  GOOD_SEND,
  TEST_LIMITS,
  wireOf,
} from "./fixtures.ts";
import { parseRequest } from "./parse.ts";
import { resolveSendAt } from "./parse_send.ts";

Deno.test("good send requests parse with the defaults of spec 6.2 applied", () => {
  for (const [name, fixture] of Object.entries(GOOD_SEND)) assertParses(name, fixture);
});

Deno.test("bad send requests fail with the code of spec 6.2 / 6.10", () => {
  for (const [name, fixture] of Object.entries(BAD_SEND)) assertFails(name, fixture);
});

Deno.test("the default ttl never exceeds a smaller configured max_ttl_seconds", () => {
  const limits = { ...TEST_LIMITS, max_ttl_seconds: 3600 };
  const wire = wireOf("send", {
    id: "m1",
    to: { kind: "endpoint", id: "b" },
    body: { enc: "utf8", data: "x" },
    offline: { keep: true },
  });
  const result = parseRequest(encodeWire(wire), limits);
  assert.ok(result.ok && result.frame.type === "send");
  assert.deepEqual(result.frame.offline, { keep: true, ttl_seconds: 3600 });
});

Deno.test("body and meta limits follow the configured limits", () => {
  const limits = { ...TEST_LIMITS, max_body_bytes: 4, max_meta_bytes: 2 };
  const wire = (data: string, meta: object) =>
    encodeWire(wireOf("send", {
      id: "m1",
      to: { kind: "endpoint", id: "b" },
      body: { enc: "base64", data },
      meta,
    }));
  assert.ok(parseRequest(wire("AAECAw==", {}), limits).ok);
  const tooBig = parseRequest(wire("AAECAwQ=", {}), limits);
  assert.ok(!tooBig.ok && tooBig.error.code === "body_too_large");
  const metaTooBig = parseRequest(wire("", { a: 1 }), limits);
  assert.ok(!metaTooBig.ok && metaTooBig.error.code === "meta_too_large");
});

const NOW = 1_750_000_000_000;
const MAX_MS = TEST_LIMITS.max_schedule_seconds * 1000;

// spec 6.2: send_at_ms, or delay_ms, or the endpoint default; never later than now + max.
Deno.test("resolveSendAt computes the send time of spec 6.2", () => {
  const table: Record<
    string,
    { send_at_ms: number | null; delay_ms: number | null; def: number; at: number | "bad_request" }
  > = {
    defaultDelay: { send_at_ms: null, delay_ms: null, def: 5000, at: NOW + 5000 },
    noDefaultDelay: { send_at_ms: null, delay_ms: null, def: 0, at: NOW },
    explicitZeroDelayBeatsDefault: { send_at_ms: null, delay_ms: 0, def: 5000, at: NOW },
    delay: { send_at_ms: null, delay_ms: 10000, def: 5000, at: NOW + 10000 },
    longestDelay: { send_at_ms: null, delay_ms: MAX_MS, def: 0, at: NOW + MAX_MS },
    delayTooLong: { send_at_ms: null, delay_ms: MAX_MS + 1, def: 0, at: "bad_request" },
    futureTime: { send_at_ms: NOW + 2000, delay_ms: null, def: 5000, at: NOW + 2000 },
    pastTimeMeansNow: { send_at_ms: NOW - 2000, delay_ms: null, def: 5000, at: NOW },
    latestTime: { send_at_ms: NOW + MAX_MS, delay_ms: null, def: 0, at: NOW + MAX_MS },
    timeTooLate: { send_at_ms: NOW + MAX_MS + 1, delay_ms: null, def: 0, at: "bad_request" },
    staleDefaultIsClamped: { send_at_ms: null, delay_ms: null, def: MAX_MS * 2, at: NOW + MAX_MS },
  };
  for (const [name, { send_at_ms, delay_ms, def, at }] of Object.entries(table)) {
    const result = resolveSendAt({ send_at_ms, delay_ms }, NOW, def, TEST_LIMITS);
    if (at === "bad_request") {
      assert.ok(result instanceof ProtocolError, name);
      assert.equal(result.code, "bad_request", name);
    } else {
      assert.equal(result, at, name);
    }
  }
});
