import assert from "node:assert/strict";
import { RateLimiter } from "./rate_limit.ts";

/** A hand-driven clock; tests move time, nothing sleeps. */
class FakeClock {
  now = 1_750_000_000_000;
  read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

function takeMany(limiter: RateLimiter, key: string, n: number): number {
  let granted = 0;
  for (let i = 0; i < n; i++) if (limiter.take(key)) granted++;
  return granted;
}

Deno.test("a new bucket allows a burst of twice the rate by default (spec 6.10, 11.1)", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 50, clock: clock.read });
  assert.equal(takeMany(limiter, "e_1", 100), 100);
  assert.equal(limiter.take("e_1"), false);
});

Deno.test("an explicit burst sets the bucket size", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 10, burst: 3, clock: clock.read });
  assert.equal(takeMany(limiter, "k", 5), 3);
});

Deno.test("the bucket refills at the rate, in whole and partial tokens", () => {
  // perSecond 50: one token every 20 ms. Every wait but the last is followed by a refused take,
  // which must still bank the partial token.
  const cases: Array<{ waitMs: number[]; granted: number }> = [
    { waitMs: [19], granted: 0 },
    { waitMs: [20], granted: 1 },
    { waitMs: [7, 13], granted: 1 },
    { waitMs: [5, 5, 5, 4], granted: 0 },
    { waitMs: [39], granted: 1 },
    { waitMs: [100], granted: 5 },
    { waitMs: [1000], granted: 50 },
    { waitMs: [2000], granted: 100 },
    { waitMs: [60_000], granted: 100 },
  ];
  for (const { waitMs, granted } of cases) {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 50, clock: clock.read });
    assert.equal(takeMany(limiter, "k", 100), 100);
    for (const ms of waitMs.slice(0, -1)) {
      clock.advance(ms);
      assert.equal(limiter.take("k"), false);
    }
    clock.advance(waitMs[waitMs.length - 1]);
    assert.equal(takeMany(limiter, "k", 200), granted, `after ${waitMs.join(" + ")} ms`);
  }
});

Deno.test("a steady request rate at the limit is never refused", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 50, clock: clock.read });
  takeMany(limiter, "k", 100);
  for (let i = 0; i < 500; i++) {
    clock.advance(20);
    assert.equal(limiter.take("k"), true, `request ${i}`);
  }
  assert.equal(limiter.take("k"), false);
});

Deno.test("a fractional rate refills one token over several seconds", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 0.5, burst: 1, clock: clock.read });
  assert.equal(limiter.take("k"), true);
  clock.advance(1999);
  assert.equal(limiter.take("k"), false);
  clock.advance(1);
  assert.equal(limiter.take("k"), true);
});

Deno.test("each key has its own bucket and forget() gives a key a full one", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 1, burst: 2, clock: clock.read });
  assert.equal(takeMany(limiter, "a", 3), 2);
  assert.equal(takeMany(limiter, "b", 3), 2);
  assert.equal(limiter.size, 2);
  limiter.forget("a");
  assert.equal(limiter.size, 1);
  assert.equal(takeMany(limiter, "a", 3), 2);
});

Deno.test("a clock that steps back neither adds nor removes tokens", () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ perSecond: 1, burst: 1, clock: clock.read });
  assert.equal(limiter.take("k"), true);
  clock.advance(-10_000);
  assert.equal(limiter.take("k"), false);
  clock.advance(10_000);
  assert.equal(limiter.take("k"), false, "the lost time is not counted twice");
  clock.advance(1000);
  assert.equal(limiter.take("k"), true);
});

Deno.test("the rate limiter rejects a rate or burst that cannot work", () => {
  assert.throws(() => new RateLimiter({ perSecond: 0 }), RangeError);
  assert.throws(() => new RateLimiter({ perSecond: -1 }), RangeError);
  assert.throws(() => new RateLimiter({ perSecond: 10, burst: 0.5 }), RangeError);
  assert.equal(new RateLimiter({ perSecond: 10 }).size, 0);
});

Deno.test("a bounded RateLimiter drops the least recently used bucket (issue 28)", () => {
  let now = 0;
  const l = new RateLimiter({ perSecond: 1, burst: 1, clock: () => now, maxKeys: 2 });
  assert.equal(l.take("a"), true);
  assert.equal(l.take("b"), true);
  assert.equal(l.take("a"), false); // "a" is now the most recently used
  assert.equal(l.take("c"), true); // drops "b"
  assert.equal(l.size, 2);
  assert.equal(l.take("b"), true, "a dropped key starts with a full bucket");
  assert.equal(l.hasToken("b"), false);
  assert.equal(l.retryAfterSeconds("b"), 1);
  now += 1000;
  assert.equal(l.hasToken("b"), true);
});
