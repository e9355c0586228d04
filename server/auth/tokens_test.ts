import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import {
  constantTimeEqualHex,
  constantTimeEqualString,
  isSessionToken,
  newApiToken,
  newSessionToken,
  sha256Hex,
} from "./tokens.ts";

Deno.test("newSessionToken() is nst_ plus 43 unpadded base64url characters (spec 5)", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 100; i++) {
    const token = newSessionToken();
    assert.match(token, /^nst_[A-Za-z0-9_-]{43}$/);
    assert.equal(token.length, 4 + 43);
    assert.equal(Buffer.from(token.slice(4), "base64url").length, 32);
    seen.add(token);
  }
  assert.equal(seen.size, 100);
});

Deno.test("newApiToken() is nxm_ plus 43 unpadded base64url characters (spec 8)", () => {
  const a = newApiToken();
  const b = newApiToken();
  assert.match(a, /^nxm_[A-Za-z0-9_-]{43}$/);
  assert.equal(a.length, 47);
  assert.notEqual(a, b);
  assert.equal(isSessionToken(a), false);
});

Deno.test("sha256Hex() gives the lowercase hex digest of the UTF-8 text", () => {
  const cases: Array<[string, string]> = [
    ["", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    ["门口", createHash("sha256").update(new TextEncoder().encode("门口")).digest("hex")],
  ];
  for (const [text, want] of cases) assert.equal(sha256Hex(text), want, text);
});

Deno.test("constantTimeEqualHex() is true only for identical digests and never throws", () => {
  const h = sha256Hex("nst_token");
  const cases: Array<[string, string, boolean]> = [
    [h, sha256Hex("nst_token"), true],
    [h, sha256Hex("nst_other"), false],
    [h, h.slice(0, -1) + (h.endsWith("0") ? "1" : "0"), false],
    [h, h.slice(0, 32), false],
    [h, "", false],
    ["", "", true],
    [h, h.toUpperCase(), false],
    ["zz", "zz", true],
    ["zz", "yy", false],
  ];
  for (const [a, b, want] of cases) assert.equal(constantTimeEqualHex(a, b), want, `${a} ${b}`);
});

Deno.test("constantTimeEqualString() compares registration codes of any length", () => {
  const cases: Array<[string, string, boolean]> = [
    ["Ab3dEf7hJk9mNp2q", "Ab3dEf7hJk9mNp2q", true],
    ["Ab3dEf7hJk9mNp2q", "Ab3dEf7hJk9mNp2Q", false],
    ["Ab3dEf7hJk9mNp2q", "Ab3dEf7h", false],
    ["Ab3dEf7h", "Ab3dEf7hJk9mNp2q", false],
    ["", "", true],
    ["", "x", false],
    ["密码", "密码", true],
  ];
  for (const [a, b, want] of cases) assert.equal(constantTimeEqualString(a, b), want, `${a} ${b}`);
});

Deno.test("isSessionToken() recognises passwords that start with nst_", () => {
  const cases: Array<[string, boolean]> = [
    [newSessionToken(), true],
    ["nst_", true],
    ["nst", false],
    ["NST_abc", false],
    ["my password", false],
    ["", false],
  ];
  for (const [pw, want] of cases) assert.equal(isSessionToken(pw), want, pw);
});
