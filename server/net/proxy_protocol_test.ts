import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import {
  parseProxyHeader,
  PROXY_V1_MAX_BYTES,
  PROXY_V2_MAX_BYTES,
  PROXY_V2_SIGNATURE,
  type ProxyParse,
  readProxyHeader,
  startsLikeProxyHeader,
} from "./proxy_protocol.ts";

/** Bytes from hex digits, for fixtures as the specification prints them. */
const hex = (h: string) => [...h.matchAll(/[0-9a-f]{2}/g)].map((m) => parseInt(m[0], 16));
/** The v2 signature, as section 2.2 of the specification spells it. */
const SIG = hex("0d0a0d0a 000d0a51 5549540a");

/** A v2 header: signature, version/command, family/protocol, length, then `body`. */
function v2(verCmd: number, famProto: number, body: number[], length = body.length): Uint8Array {
  return Uint8Array.from([...SIG, verCmd, famProto, length >> 8, length & 0xff, ...body]);
}

/** 192.0.2.7:51000 -> 198.51.100.1:1883 */
const V4_BLOCK = [192, 0, 2, 7, 198, 51, 100, 1, 0xc7, 0x38, 0x07, 0x5b];
/** 2001:db8::7 port 51000 -> 2001:db8::1 port 1883 */
const V6_BLOCK = hex(
  "20010db8 00000000 00000000 00000007 20010db8 00000000 00000000 00000001 c738 075b",
);
/** ::ffff:203.0.113.9 as 16 bytes. */
const MAPPED = hex("00000000 00000000 0000ffff cb007109");
/** PP2_TYPE_SSL with the client bit set, verify 0, no sub-TLVs. */
const SSL_TLV = [0x20, 0x00, 0x05, 0x01, 0, 0, 0, 0];
/** PP2_TYPE_ALPN "h2", skipped. */
const ALPN_TLV = [0x01, 0x00, 0x02, 0x68, 0x32];
const ascii = (s: string) => new TextEncoder().encode(s);

interface Case {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly want: ProxyParse;
}

function done(length: number, version: 1 | 2, client: string | null, secure = false): ProxyParse {
  return { status: "done", length, header: { version, client, secure } };
}

const VALID: Case[] = [
  { name: "v2 PROXY TCP4", bytes: v2(0x21, 0x11, V4_BLOCK), want: done(28, 2, "192.0.2.7") },
  { name: "v2 PROXY TCP6", bytes: v2(0x21, 0x21, V6_BLOCK), want: done(52, 2, "2001:db8::7") },
  {
    name: "v2 TCP6 with an IPv4-mapped source is the IPv4 client",
    bytes: v2(0x21, 0x21, [...MAPPED, ...V6_BLOCK.slice(16)]),
    want: done(52, 2, "203.0.113.9"),
  },
  {
    name: "v2 LOCAL (a health check) keeps the TCP peer, whatever the block says",
    bytes: v2(0x20, 0x11, V4_BLOCK),
    want: done(28, 2, null),
  },
  { name: "v2 LOCAL UNSPEC, empty", bytes: v2(0x20, 0x00, []), want: done(16, 2, null) },
  { name: "v2 PROXY UNSPEC keeps the peer", bytes: v2(0x21, 0x00, []), want: done(16, 2, null) },
  {
    name: "v2 PROXY UNIX stream keeps the peer",
    bytes: v2(0x21, 0x31, new Array(216).fill(0)),
    want: done(232, 2, null),
  },
  {
    name: "v2 PROXY UDP4 keeps the peer",
    bytes: v2(0x21, 0x12, V4_BLOCK),
    want: done(28, 2, null),
  },
  {
    name: "v2 with the SSL TLV: the proxy terminated TLS",
    bytes: v2(0x21, 0x11, [...V4_BLOCK, ...ALPN_TLV, ...SSL_TLV]),
    want: done(28 + 13, 2, "192.0.2.7", true),
  },
  {
    name: "v2 SSL TLV without the client bit",
    bytes: v2(0x21, 0x11, [...V4_BLOCK, 0x20, 0x00, 0x05, 0x00, 0, 0, 0, 0]),
    want: done(36, 2, "192.0.2.7", false),
  },
  {
    name: "v2 followed by the client's bytes: only the header is consumed",
    bytes: Uint8Array.from([...v2(0x21, 0x11, V4_BLOCK), 0x10, 0x0c]),
    want: done(28, 2, "192.0.2.7"),
  },
  {
    name: "v1 TCP4",
    bytes: ascii("PROXY TCP4 192.0.2.7 198.51.100.1 51000 1883\r\nGET"),
    want: done(46, 1, "192.0.2.7"),
  },
  {
    name: "v1 TCP6",
    bytes: ascii("PROXY TCP6 2001:db8::7 2001:db8::1 51000 1883\r\n"),
    want: done(47, 1, "2001:db8::7"),
  },
  { name: "v1 UNKNOWN", bytes: ascii("PROXY UNKNOWN\r\n"), want: done(15, 1, null) },
  {
    name: "v1 UNKNOWN with addresses ignored",
    bytes: ascii("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"),
    want: done(35, 1, null),
  },
];

const TOO_LONG = PROXY_V2_MAX_BYTES - 16 + 1;
const MALFORMED: { name: string; bytes: Uint8Array; reason: RegExp }[] = [
  {
    name: "v2 signature broken in byte 8",
    bytes: Uint8Array.from([...SIG.slice(0, 7), 0x52, ...SIG.slice(8), 0x21, 0x11, 0, 12]),
    reason: /signature/,
  },
  { name: "version 1 in a v2 header", bytes: v2(0x11, 0x11, V4_BLOCK), reason: /version 1/ },
  { name: "version 3", bytes: v2(0x31, 0x11, V4_BLOCK), reason: /version 3/ },
  { name: "command 2", bytes: v2(0x22, 0x11, V4_BLOCK), reason: /command 2/ },
  { name: "command 15", bytes: v2(0x2f, 0x11, V4_BLOCK), reason: /command 15/ },
  {
    name: "TCP4 block shorter than 12 bytes",
    bytes: v2(0x21, 0x11, V4_BLOCK.slice(0, 8)),
    reason: /shorter/,
  },
  {
    name: "TCP6 block of only 12 bytes",
    bytes: v2(0x21, 0x21, V4_BLOCK),
    reason: /shorter/,
  },
  {
    name: "length over the bound",
    bytes: v2(0x21, 0x11, V4_BLOCK, TOO_LONG),
    reason: /too long/,
  },
  {
    name: "length 65535 refused before buffering it",
    bytes: v2(0x21, 0x11, V4_BLOCK, 0xffff),
    reason: /too long/,
  },
  {
    name: "TLV header truncated",
    bytes: v2(0x21, 0x11, [...V4_BLOCK, 0x04, 0x00]),
    reason: /truncated TLV/,
  },
  {
    name: "TLV value longer than the header",
    bytes: v2(0x21, 0x11, [...V4_BLOCK, 0x04, 0x00, 0x09, 1, 2]),
    reason: /TLV longer/,
  },
  {
    name: "SSL TLV too short",
    bytes: v2(0x21, 0x11, [...V4_BLOCK, 0x20, 0x00, 0x01, 0x01]),
    reason: /PP2_TYPE_SSL/,
  },
  { name: "v1 LF without CR", bytes: ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), reason: /CRLF/ },
  {
    name: "v1 too long without LF",
    bytes: ascii("PROXY TCP4 " + "1".repeat(PROXY_V1_MAX_BYTES)),
    reason: /too long/,
  },
  {
    name: "v1 LF after 107 bytes",
    bytes: ascii("PROXY UNKNOWN " + " ".repeat(100) + "\r\n"),
    reason: /too long/,
  },
  { name: "v1 TCP5", bytes: ascii("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n"), reason: /family/ },
  { name: "v1 five fields", bytes: ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"), reason: /6 fields/ },
  {
    name: "v1 double space",
    bytes: ascii("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n"),
    reason: /6 fields/,
  },
  { name: "v1 port 65536", bytes: ascii("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"), reason: /port/ },
  { name: "v1 port 0080", bytes: ascii("PROXY TCP4 1.2.3.4 5.6.7.8 0080 2\r\n"), reason: /port/ },
  {
    name: "v1 bad IPv4",
    bytes: ascii("PROXY TCP4 1.2.3.400 5.6.7.8 1 2\r\n"),
    reason: /address/,
  },
  {
    name: "v1 TCP4 with IPv6 addresses",
    bytes: ascii("PROXY TCP4 ::1 ::2 1 2\r\n"),
    reason: /address/,
  },
  {
    name: "v1 TCP6 with IPv4 addresses",
    bytes: ascii("PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n"),
    reason: /address/,
  },
  {
    name: "v1 lowercase",
    bytes: ascii("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n"),
    reason: /not a PROXY/,
  },
  { name: "an HTTP request", bytes: ascii("POST / HTTP/1.1\r\n"), reason: /v1 prefix/ },
];

for (const c of VALID) {
  Deno.test(`PROXY header fixture: ${c.name}`, () => {
    assert.deepEqual(parseProxyHeader(c.bytes), c.want);
  });
}

for (const c of MALFORMED) {
  Deno.test(`malformed PROXY header is invalid: ${c.name}`, () => {
    const r = parseProxyHeader(c.bytes);
    assert.equal(r.status, "invalid");
    if (r.status === "invalid") assert.match(r.reason, c.reason);
  });
}

Deno.test("every proper prefix of a valid header is incomplete, never invalid", () => {
  for (const c of VALID) {
    const want = c.want;
    if (want.status !== "done") continue;
    for (let n = 0; n < want.length; n++) {
      assert.deepEqual(parseProxyHeader(c.bytes.subarray(0, n)), { status: "incomplete" }, c.name);
    }
  }
});

Deno.test("the exported v2 signature is the specification's", () => {
  assert.deepEqual([...PROXY_V2_SIGNATURE], SIG);
});

Deno.test("startsLikeProxyHeader tells PROXY apart from POST, PUT and MQTT", () => {
  assert.equal(startsLikeProxyHeader(ascii("P")), true);
  assert.equal(startsLikeProxyHeader(ascii("PROXY TCP4")), true);
  assert.equal(startsLikeProxyHeader(Uint8Array.from(SIG.slice(0, 3))), true);
  assert.equal(startsLikeProxyHeader(ascii("POST /")), false);
  assert.equal(startsLikeProxyHeader(ascii("PUT /")), false);
  assert.equal(startsLikeProxyHeader(Uint8Array.of(0x0d, 0x0a, 0x0d, 0x0b)), false);
  assert.equal(startsLikeProxyHeader(Uint8Array.of(0x10, 0x0c)), false);
  assert.equal(startsLikeProxyHeader(new Uint8Array(0)), false);
});

Deno.test("readProxyHeader reads a header split over chunks and leaves the rest unread", async () => {
  const stream = new PassThrough();
  const bytes = Uint8Array.from([...v2(0x21, 0x11, V4_BLOCK), 0x10, 0x0c, 0x00]);
  const read = readProxyHeader(stream, 5000);
  for (const b of bytes) stream.write(Buffer.of(b));
  assert.deepEqual(await read, {
    ok: true,
    header: { version: 2, client: "192.0.2.7", secure: false },
  });
  assert.equal(stream.isPaused(), true);
  stream.resume();
  const rest: number[] = [];
  for await (const chunk of stream) {
    rest.push(...chunk);
    if (rest.length >= 3) break;
  }
  assert.deepEqual(rest, [0x10, 0x0c, 0x00]);
});

Deno.test("readProxyHeader gives up on a slow header at its deadline", async () => {
  const stream = new PassThrough();
  const started = Date.now();
  const read = readProxyHeader(stream, 100);
  stream.write(Buffer.from(SIG.slice(0, 5)));
  const r = await read;
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.reason, /in time/);
  assert.ok(Date.now() - started >= 90, "gave up before the deadline");
});

Deno.test("readProxyHeader fails on a malformed header and on a stream that ends", async () => {
  const bad = new PassThrough();
  const r1 = readProxyHeader(bad, 5000);
  bad.write(Buffer.from(v2(0x22, 0x11, V4_BLOCK)));
  assert.deepEqual(await r1, { ok: false, reason: "unsupported command 2" });

  const short = new PassThrough();
  const r2 = readProxyHeader(short, 5000);
  short.end(Buffer.from(SIG));
  const got = await r2;
  assert.equal(got.ok, false);
  if (!got.ok) assert.match(got.reason, /closed/);
});
