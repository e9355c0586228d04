import assert from "node:assert/strict";
import { test } from "node:test";
import { Backoff } from "../../src/backoff.ts";

test("backoff starts at 1 s, doubles and stops at 30 s (spec 9 step 4)", () => {
  const b = new Backoff({ random: () => 0.5 }); // 0.5 means no jitter
  const delays = Array.from({ length: 8 }, () => b.next());
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});

test("backoff reset starts the schedule again at 1 s", () => {
  const b = new Backoff({ random: () => 0.5 });
  b.next();
  b.next();
  b.next();
  assert.equal(b.attempts, 3);
  b.reset();
  assert.equal(b.attempts, 0);
  assert.equal(b.next(), 1000);
});

test("backoff jitter stays within ±30% and uses the whole range", () => {
  assert.equal(new Backoff({ random: () => 0 }).next(), 700);
  assert.equal(new Backoff({ random: () => 0.999999 }).next(), 1300);
  const b = new Backoff();
  let lo = Infinity;
  let hi = 0;
  for (let i = 0; i < 2000; i++) {
    b.reset();
    for (let k = 0; k < 7; k++) b.next();
    const d = b.next(); // capped base 30 s
    lo = Math.min(lo, d);
    hi = Math.max(hi, d);
  }
  assert.ok(lo >= 21_000 && hi <= 39_000, `${lo}..${hi}`);
  assert.ok(lo < 24_000 && hi > 36_000, `jitter too narrow: ${lo}..${hi}`);
});
