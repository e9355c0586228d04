import assert from "node:assert/strict";
import { ID_ALPHABET, PASSWORD_ALPHABET, randomId, randomPassword } from "./generate.ts";

Deno.test("the password alphabet has letters and digits but none of 0, O, 1, l, I", () => {
  assert.equal(PASSWORD_ALPHABET.length, 57);
  assert.equal(new Set(PASSWORD_ALPHABET).size, 57);
  for (const c of "0O1lI") assert.ok(!PASSWORD_ALPHABET.includes(c), c);
  assert.match(PASSWORD_ALPHABET, /^[A-Za-z2-9]+$/);
});

Deno.test("randomPassword() returns the asked length from the unambiguous alphabet", () => {
  const allowed = new RegExp(`^[${PASSWORD_ALPHABET}]+$`);
  // 20: admin password (spec 8); 16: registration code (spec 8).
  for (const length of [1, 12, 16, 20, 64, 300]) {
    const pw = randomPassword(length);
    assert.equal(pw.length, length);
    assert.match(pw, allowed);
  }
  assert.notEqual(randomPassword(20), randomPassword(20));
});

Deno.test("randomPassword() rejects a length that is not a positive integer", () => {
  for (const length of [0, -1, 2.5, Number.NaN]) {
    assert.throws(() => randomPassword(length), RangeError, String(length));
  }
});

Deno.test("randomPassword() draws every symbol about equally often (no modulo bias)", () => {
  // 256 = 4 * 57 + 28: with a plain `byte % 57` the first 28 symbols would come up 25% more
  // often than the other 29. Rejection sampling keeps both halves level.
  const perSymbol = 2000;
  const text = randomPassword(PASSWORD_ALPHABET.length * perSymbol);
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 57);
  const mean = (chars: string) =>
    [...chars].reduce((sum, c) => sum + (counts.get(c) ?? 0), 0) / chars.length;
  const low = mean(PASSWORD_ALPHABET.slice(0, 28));
  const high = mean(PASSWORD_ALPHABET.slice(28));
  assert.ok(Math.abs(low / high - 1) < 0.05, `first 28: ${low}, last 29: ${high}`);
});

Deno.test("randomId() joins the prefix and n lowercase letters or digits with an underscore", () => {
  const cases: Array<[string, number, RegExp]> = [
    ["e", 8, /^e_[0-9a-z]{8}$/],
    ["g", 8, /^g_[0-9a-z]{8}$/],
    ["e_", 8, /^e_[0-9a-z]{8}$/],
    ["", 12, /^[0-9a-z]{12}$/],
  ];
  for (const [prefix, n, want] of cases) assert.match(randomId(prefix, n), want);
  assert.equal(ID_ALPHABET, "0123456789abcdefghijklmnopqrstuvwxyz");
  assert.notEqual(randomId("e", 8), randomId("e", 8));
  assert.throws(() => randomId("e", 0), RangeError);
});
