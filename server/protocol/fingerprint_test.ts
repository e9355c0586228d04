import assert from "node:assert/strict";
import { encodeWire, GOOD_SEND, TEST_LIMITS, wireOf } from "./fixtures.ts";
import {
  FINGERPRINT_FORMAT,
  fingerprintHead,
  requestFingerprint,
  sameFingerprint,
} from "./fingerprint.ts";
import { canonicalJson } from "./canonical_json.ts";
import type { SendFrame } from "./frames.ts";
import { parseRequest } from "./parse.ts";

function parseSend(wire: Record<string, unknown>): SendFrame {
  const result = parseRequest(encodeWire(wire), TEST_LIMITS);
  if (!result.ok) assert.fail(result.error.message);
  assert.equal(result.frame.type, "send");
  return result.frame as SendFrame;
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

const BASE = {
  id: "m1",
  to: { kind: "endpoint", id: "b" },
  body: { enc: "utf8", content_type: "text/plain", data: "hi" },
  meta: { a: 1, b: { c: [1, 2] } },
  offline: { keep: true, ttl_seconds: 60 },
  receipt: true,
};
const base = () => wireOf("send", structuredClone(BASE));

Deno.test("the same request always has the same 32-byte fingerprint", () => {
  const a = requestFingerprint(parseSend(base()));
  const b = requestFingerprint(parseSend(base()));
  assert.equal(a.length, 32);
  assert.ok(sameFingerprint(a, b));
});

// Pinned so that any change of the canonical form is a deliberate one (stored fingerprints of
// the last idempotency_hours would otherwise turn retries into conflicts after an upgrade).
// Cross-checked with Python: sha256(json.dumps([...], separators=(",", ":")) + b"hello").
const PINNED_MINIMAL = "dede3085b45c2b1f140f28ec72f01509f2000949502b9f01447bf4eb73ccc2a8";

Deno.test("the fingerprint of the minimal send is pinned", () => {
  const fp = requestFingerprint(GOOD_SEND.sendMinimal.frame as SendFrame);
  assert.equal(hex(fp), PINNED_MINIMAL);
});

Deno.test("fields outside spec 7.3 and key order do not change the fingerprint", () => {
  const expected = requestFingerprint(parseSend(base()));
  const variants: Record<string, Record<string, unknown>> = {
    otherRid: { ...base(), rid: "another" },
    otherMessageId: { ...base(), id: "m2" },
    talkPassword: { ...base(), talk_password: "secret" },
    unknownField: { ...base(), extra: { x: 1 } },
    metaKeyOrder: { ...base(), meta: JSON.parse('{"b":{"c":[1,2]},"a":1}') },
  };
  for (const [name, wire] of Object.entries(variants)) {
    assert.ok(sameFingerprint(requestFingerprint(parseSend(wire)), expected), name);
  }
});

Deno.test("an omitted field hashes like its default value", () => {
  const minimal = wireOf("send", {
    id: "m1",
    to: { kind: "endpoint", id: "b" },
    body: { enc: "utf8", data: "x" },
  });
  const explicit = wireOf("send", {
    id: "m1",
    to: { kind: "endpoint", id: "b" },
    body: { enc: "utf8", data: "x", content_type: "text/plain; charset=utf-8" },
    meta: {},
    offline: { keep: false },
    receipt: true,
    talk_password: "",
  });
  assert.ok(
    sameFingerprint(
      requestFingerprint(parseSend(minimal)),
      requestFingerprint(parseSend(explicit)),
    ),
  );
});

Deno.test("changing any field of spec 7.3 changes the fingerprint", () => {
  const mutations: Record<string, (w: Record<string, unknown>) => void> = {
    toKind: (w) => (w.to = { kind: "group", id: "b" }),
    toId: (w) => (w.to = { kind: "endpoint", id: "c" }),
    bodyEncSameBytes: (w) => (w.body = { enc: "base64", content_type: "text/plain", data: "aGk=" }),
    contentType: (w) => (w.body = { ...BASE.body, content_type: "text/markdown" }),
    bodyData: (w) => (w.body = { ...BASE.body, data: "ho" }),
    bodyLonger: (w) => (w.body = { ...BASE.body, data: "hi " }),
    metaValue: (w) => (w.meta = { a: 2, b: { c: [1, 2] } }),
    metaKey: (w) => (w.meta = { a: 1, b: { d: [1, 2] } }),
    metaArrayOrder: (w) => (w.meta = { a: 1, b: { c: [2, 1] } }),
    metaNumberAsString: (w) => (w.meta = { a: "1", b: { c: [1, 2] } }),
    sendAt: (w) => (w.send_at_ms = 1750000000000),
    delayZero: (w) => (w.delay_ms = 0),
    delay: (w) => (w.delay_ms = 1000),
    keepOff: (w) => (w.offline = { keep: false }),
    ttl: (w) => (w.offline = { keep: true, ttl_seconds: 61 }),
    receiptOff: (w) => (w.receipt = false),
  };
  const seen = new Map<string, string>([[hex(requestFingerprint(parseSend(base()))), "base"]]);
  for (const [name, mutate] of Object.entries(mutations)) {
    const wire = base();
    mutate(wire);
    const fp = hex(requestFingerprint(parseSend(wire)));
    assert.ok(!seen.has(fp), `${name} hashes like ${seen.get(fp)}`);
    seen.set(fp, name);
  }
});

Deno.test("sameFingerprint compares bytes and lengths", () => {
  assert.ok(sameFingerprint(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
  assert.ok(!sameFingerprint(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
  assert.ok(!sameFingerprint(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])));
});

Deno.test("the fingerprint's head is the canonical JSON of its array, for every kind of value", () => {
  const variants: Record<string, unknown>[] = [
    base(),
    wireOf("send", { ...structuredClone(BASE), meta: {} }),
    wireOf("send", {
      ...structuredClone(BASE),
      to: { kind: "group", id: "g.1_x" },
      body: { enc: "utf8", content_type: 'text/x; a="\u00fc"', data: "\u00fc" },
      meta: { z: null, "\u00e9": ['"q"', { y: false, x: 1.5 }], a: "\u2028\ud83d\ude00" },
      send_at_ms: 1_800_000_000_000,
      offline: { keep: false },
      receipt: false,
    }),
    wireOf("send", {
      ...structuredClone(BASE),
      body: { enc: "base64", data: "AAEC" },
      delay_ms: 0,
      offline: { keep: true },
    }),
  ];
  for (const wire of variants) {
    const f = parseSend(wire);
    const reference = canonicalJson([
      FINGERPRINT_FORMAT,
      f.to.kind,
      f.to.id,
      f.body.enc,
      f.body.content_type,
      f.body.bytes.length,
      f.meta,
      f.send_at_ms,
      f.delay_ms,
      f.offline.keep,
      f.offline.ttl_seconds,
      f.receipt,
    ]);
    assert.equal(fingerprintHead(f), reference);
  }
});
