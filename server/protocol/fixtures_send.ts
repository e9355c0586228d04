/** Named `send` fixtures (spec 6.2); import them from fixtures.ts. */
import { Buffer } from "node:buffer";
import { bad, type BadRequest, good, type GoodRequest, TEST_LIMITS } from "./fixtures_base.ts";
import type { FrameFields } from "./fields.ts";

const encoder = new TextEncoder();
const MAX_BODY = TEST_LIMITS.max_body_bytes;

const TO = { kind: "endpoint", id: "device-1" } as const;

/** The parsed fields of a minimal utf8 send, with every default applied; override per fixture. */
function parsedSend(over: Partial<FrameFields<"send">> = {}): FrameFields<"send"> {
  return {
    id: "m1",
    to: TO,
    body: {
      enc: "utf8",
      content_type: "text/plain; charset=utf-8",
      data: "hello",
      bytes: encoder.encode("hello"),
    },
    meta: {},
    send_at_ms: null,
    delay_ms: null,
    offline: { keep: false, ttl_seconds: 0 },
    receipt: true,
    talk_password: null,
    ...over,
  };
}

const MINIMAL = { id: "m1", to: TO, body: { enc: "utf8", data: "hello" } };

function base64Body(length: number): { data: string; bytes: Uint8Array } {
  const bytes = new Uint8Array(length).map((_, i) => i % 251);
  return { data: Buffer.from(bytes).toString("base64"), bytes };
}

const b64AtLimit = base64Body(MAX_BODY);
const b64OverLimit = base64Body(MAX_BODY + 1);
/** `{"k":"…"}` is 8 bytes plus the value. */
const metaOfSize = (size: number) => ({ k: "x".repeat(size - 8) });

/** `send` requests that parse, with the frame they parse to. */
export const GOOD_SEND: Readonly<Record<string, GoodRequest>> = {
  sendSpecExample: good(
    "send",
    {
      id: "018f.example",
      to: TO,
      body: { enc: "utf8", content_type: "text/plain", data: "hello" },
      meta: { k: "v" },
      delay_ms: 10000,
      offline: { keep: true, ttl_seconds: 86400 },
      receipt: true,
      talk_password: "",
    },
    parsedSend({
      id: "018f.example",
      body: {
        enc: "utf8",
        content_type: "text/plain",
        data: "hello",
        bytes: encoder.encode("hello"),
      },
      meta: { k: "v" },
      delay_ms: 10000,
      offline: { keep: true, ttl_seconds: 86400 },
    }),
  ),
  sendMinimal: good("send", MINIMAL, parsedSend()),
  sendBase64: good(
    "send",
    { ...MINIMAL, body: { enc: "base64", data: "AAEC/w==" } },
    parsedSend({
      body: {
        enc: "base64",
        content_type: "application/octet-stream",
        data: "AAEC/w==",
        bytes: new Uint8Array([0, 1, 2, 255]),
      },
    }),
  ),
  sendToGroupAtTime: good(
    "send",
    { ...MINIMAL, to: { kind: "group", id: "g_ab12cd34" }, send_at_ms: 1750000010000 },
    parsedSend({ to: { kind: "group", id: "g_ab12cd34" }, send_at_ms: 1750000010000 }),
  ),
  sendKeepDefaultTtl: good(
    "send",
    { ...MINIMAL, offline: { keep: true } },
    parsedSend({ offline: { keep: true, ttl_seconds: 86400 } }),
  ),
  sendKeepMaxTtl: good(
    "send",
    { ...MINIMAL, offline: { keep: true, ttl_seconds: TEST_LIMITS.max_ttl_seconds } },
    parsedSend({ offline: { keep: true, ttl_seconds: TEST_LIMITS.max_ttl_seconds } }),
  ),
  sendTtlIgnoredWithoutKeep: good(
    "send",
    { ...MINIMAL, offline: { keep: false, ttl_seconds: 0 } },
    parsedSend(),
  ),
  sendNullsAsAbsent: good(
    "send",
    {
      ...MINIMAL,
      body: { enc: "utf8", data: "hello", content_type: null },
      meta: null,
      delay_ms: null,
      send_at_ms: 5,
      offline: null,
      receipt: null,
      talk_password: null,
    },
    parsedSend({ send_at_ms: 5 }),
  ),
  sendEmptyContentTypeDefaults: good(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "hello", content_type: "" } },
    parsedSend(),
  ),
  sendEmptyBody: good(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "" } },
    parsedSend({
      body: {
        enc: "utf8",
        content_type: "text/plain; charset=utf-8",
        data: "",
        bytes: new Uint8Array(),
      },
    }),
  ),
  sendUnicodeBody: good(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "中文<>&😀" } },
    parsedSend({
      body: {
        enc: "utf8",
        content_type: "text/plain; charset=utf-8",
        data: "中文<>&😀",
        bytes: encoder.encode("中文<>&😀"),
      },
    }),
  ),
  sendUtf8BodyAtLimit: good(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "a".repeat(MAX_BODY) } },
    parsedSend({
      body: {
        enc: "utf8",
        content_type: "text/plain; charset=utf-8",
        data: "a".repeat(MAX_BODY),
        bytes: encoder.encode("a".repeat(MAX_BODY)),
      },
    }),
  ),
  sendBase64BodyAtLimit: good(
    "send",
    { ...MINIMAL, body: { enc: "base64", data: b64AtLimit.data } },
    parsedSend({
      body: {
        enc: "base64",
        content_type: "application/octet-stream",
        data: b64AtLimit.data,
        bytes: b64AtLimit.bytes,
      },
    }),
  ),
  sendMetaAtLimit: good(
    "send",
    { ...MINIMAL, meta: metaOfSize(TEST_LIMITS.max_meta_bytes) },
    parsedSend({ meta: metaOfSize(TEST_LIMITS.max_meta_bytes) }),
  ),
  sendContentTypeAtLimit: good(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "hello", content_type: "t".repeat(128) } },
    parsedSend({
      body: {
        enc: "utf8",
        content_type: "t".repeat(128),
        data: "hello",
        bytes: encoder.encode("hello"),
      },
    }),
  ),
  sendIdAtLimit: good(
    "send",
    { ...MINIMAL, id: "A".repeat(64) },
    parsedSend({ id: "A".repeat(64) }),
  ),
  sendDelayZeroReceiptOff: good(
    "send",
    { ...MINIMAL, delay_ms: 0, receipt: false, talk_password: "secret" },
    parsedSend({ delay_ms: 0, receipt: false, talk_password: "secret" }),
  ),
  sendUnknownFieldsIgnored: good(
    "send",
    { ...MINIMAL, extra: [1, 2], to: { ...TO, extra: true }, body: { ...MINIMAL.body, x: 1 } },
    parsedSend(),
  ),
};

/** `send` requests that fail, with the code they fail with. */
export const BAD_SEND: Readonly<Record<string, BadRequest>> = {
  sendIdMissing: bad("send", { to: TO, body: MINIMAL.body }),
  sendIdEmpty: bad("send", { ...MINIMAL, id: "" }),
  sendIdTooLong: bad("send", { ...MINIMAL, id: "A".repeat(65) }),
  sendIdBadCharacter: bad("send", { ...MINIMAL, id: "a b" }),
  sendIdNumber: bad("send", { ...MINIMAL, id: 5 }),
  sendToMissing: bad("send", { id: "m1", body: MINIMAL.body }),
  sendToNotObject: bad("send", { ...MINIMAL, to: "device-1" }),
  sendToKindUnknown: bad("send", { ...MINIMAL, to: { kind: "user", id: "device-1" } }),
  sendToIdEmpty: bad("send", { ...MINIMAL, to: { kind: "endpoint", id: "" } }),
  sendToIdBadCharacter: bad("send", { ...MINIMAL, to: { kind: "endpoint", id: "a/b" } }),
  sendBodyMissing: bad("send", { id: "m1", to: TO }),
  sendBodyEncUnknown: bad("send", { ...MINIMAL, body: { enc: "hex", data: "00" } }),
  sendBodyEncMissing: bad("send", { ...MINIMAL, body: { data: "hello" } }),
  sendBodyDataNumber: bad("send", { ...MINIMAL, body: { enc: "utf8", data: 1 } }),
  sendBodyDataMissing: bad("send", { ...MINIMAL, body: { enc: "utf8" } }),
  sendUtf8LoneSurrogate: bad("send", { ...MINIMAL, body: { enc: "utf8", data: "a\ud800" } }),
  sendUtf8BodyOverLimit: bad(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "a".repeat(MAX_BODY + 1) } },
    "body_too_large",
  ),
  sendUtf8BodyOverLimitInBytes: bad(
    "send",
    { ...MINIMAL, body: { enc: "utf8", data: "中".repeat(MAX_BODY / 3 + 1) } },
    "body_too_large",
  ),
  sendBase64BodyOverLimit: bad(
    "send",
    { ...MINIMAL, body: { enc: "base64", data: b64OverLimit.data } },
    "body_too_large",
  ),
  sendBase64MissingPadding: bad("send", { ...MINIMAL, body: { enc: "base64", data: "aGk" } }),
  sendBase64Whitespace: bad("send", { ...MINIMAL, body: { enc: "base64", data: "aG k=" } }),
  sendBase64Newline: bad("send", { ...MINIMAL, body: { enc: "base64", data: "aGVs\nbG8=" } }),
  sendBase64UrlAlphabet: bad("send", { ...MINIMAL, body: { enc: "base64", data: "-_-_" } }),
  sendBase64TrailingBits: bad("send", { ...MINIMAL, body: { enc: "base64", data: "aGl=" } }),
  sendBase64BadCharacter: bad("send", { ...MINIMAL, body: { enc: "base64", data: "aGk!" } }),
  sendBase64OnlyPadding: bad("send", { ...MINIMAL, body: { enc: "base64", data: "====" } }),
  sendContentTypeTooLong: bad("send", {
    ...MINIMAL,
    body: { enc: "utf8", data: "x", content_type: "t".repeat(129) },
  }),
  sendContentTypeNumber: bad("send", {
    ...MINIMAL,
    body: { enc: "utf8", data: "x", content_type: 1 },
  }),
  sendMetaArray: bad("send", { ...MINIMAL, meta: [] }),
  sendMetaString: bad("send", { ...MINIMAL, meta: "k=v" }),
  sendMetaOverLimit: bad(
    "send",
    { ...MINIMAL, meta: metaOfSize(TEST_LIMITS.max_meta_bytes + 1) },
    "meta_too_large",
  ),
  sendMetaDeeplyNested: bad(
    "send",
    { ...MINIMAL, meta: { k: JSON.parse("[".repeat(5000) + "]".repeat(5000)) } },
    "meta_too_large",
  ),
  sendBothTimes: bad("send", { ...MINIMAL, send_at_ms: 1750000010000, delay_ms: 0 }),
  sendDelayNegative: bad("send", { ...MINIMAL, delay_ms: -1 }),
  sendDelayFraction: bad("send", { ...MINIMAL, delay_ms: 1.5 }),
  sendDelayString: bad("send", { ...MINIMAL, delay_ms: "10" }),
  sendSendAtNegative: bad("send", { ...MINIMAL, send_at_ms: -5 }),
  sendSendAtUnsafe: bad("send", { ...MINIMAL, send_at_ms: 2 ** 60 }),
  sendOfflineNotObject: bad("send", { ...MINIMAL, offline: true }),
  sendKeepString: bad("send", { ...MINIMAL, offline: { keep: "true" } }),
  sendTtlZero: bad("send", { ...MINIMAL, offline: { keep: true, ttl_seconds: 0 } }),
  sendTtlOverLimit: bad("send", {
    ...MINIMAL,
    offline: { keep: true, ttl_seconds: TEST_LIMITS.max_ttl_seconds + 1 },
  }),
  sendReceiptString: bad("send", { ...MINIMAL, receipt: "yes" }),
  sendTalkPasswordNumber: bad("send", { ...MINIMAL, talk_password: 1234 }),
  sendTalkPasswordTooLong: bad("send", { ...MINIMAL, talk_password: "p".repeat(129) }),
};
