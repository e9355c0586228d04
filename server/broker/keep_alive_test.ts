import assert from "node:assert/strict";
import { KeepAliveTimers } from "./keep_alive.ts";

/** Timers on a hand-moved clock; `fire()` is what the runtime timer would call. */
function clocked() {
  let now = 0;
  const timers = new KeepAliveTimers({ now: () => now });
  return {
    timers,
    at(ms: number) {
      now = ms;
      timers.fire();
    },
    set(ms: number) {
      now = ms;
    },
  };
}

Deno.test("a keep-alive fires interval ms after the last refresh, never earlier", () => {
  const { timers, at, set } = clocked();
  const fired: string[] = [];
  try {
    const a = timers.add(1500, () => fired.push("a"));
    timers.add(1000, () => fired.push("b"));
    at(999);
    assert.deepEqual(fired, []);
    at(1000);
    assert.deepEqual(fired, ["b"]);
    set(1400);
    a.refresh();
    at(1500);
    assert.deepEqual(fired, ["b"], "a was refreshed at 1400: due at 2900");
    at(2899);
    assert.deepEqual(fired, ["b"]);
    at(2900);
    assert.deepEqual(fired, ["b", "a"]);
    assert.equal(timers.size, 0);
    at(10_000);
    assert.deepEqual(fired, ["b", "a"], "each fires once");
  } finally {
    timers.close();
  }
});

Deno.test("removed keep-alives never fire, and the heap keeps the others in due order", () => {
  const { timers, at } = clocked();
  const fired: number[] = [];
  try {
    // Deterministic shuffled intervals, so removals hit every place in the heap.
    const intervals = Array.from({ length: 200 }, (_, i) => 1000 + ((i * 7919) % 200) * 10);
    const handles = intervals.map((ms, i) => timers.add(ms, () => fired.push(i)));
    for (let i = 0; i < handles.length; i += 3) timers.remove(handles[i]);
    timers.remove(handles[0]); // twice: nothing happens
    assert.equal(timers.size, 200 - 67);
    for (let t = 1000; t <= 3000; t += 10) at(t);
    const expected = intervals.map((ms, i) => ({ ms, i })).filter(({ i }) => i % 3 !== 0)
      .sort((x, y) => x.ms - y.ms || 0).map(({ ms }) => ms);
    assert.deepEqual(fired.map((i) => intervals[i]), expected);
    assert.equal(fired.length, 133);
    assert.equal(timers.size, 0);
  } finally {
    timers.close();
  }
});

Deno.test("a keep-alive callback may remove another that came due with it, or add one", () => {
  const { timers, at } = clocked();
  const fired: string[] = [];
  try {
    const b = timers.add(100, () => fired.push("b"));
    timers.add(90, () => {
      fired.push("a");
      timers.remove(b);
      timers.add(50, () => fired.push("c"));
    });
    at(100);
    assert.deepEqual(fired, ["a"], "b came due with a, but a removed it first");
    at(149);
    assert.deepEqual(fired, ["a"]);
    at(150);
    assert.deepEqual(fired, ["a", "c"]);
    assert.equal(timers.size, 0);
  } finally {
    timers.close();
  }
});

Deno.test("the runtime timer fires a keep-alive on time", async () => {
  const timers = new KeepAliveTimers();
  try {
    const t0 = performance.now();
    const { promise, resolve } = Promise.withResolvers<number>();
    timers.add(60, () => resolve(performance.now() - t0));
    // The shared timer is unref'd (like aedes' own timers under a server): this keeps the test up.
    const guard = setTimeout(() => {}, 5000);
    const ms = await promise;
    clearTimeout(guard);
    assert.ok(ms >= 59 && ms < 2000, `fired after ${ms.toFixed(0)} ms`);
    assert.equal(timers.size, 0);
  } finally {
    timers.close();
  }
});
