import assert from "node:assert/strict";
import { SerialQueue } from "./serial_queue.ts";

Deno.test("SerialQueue works items one at a time in order", async () => {
  const seen: number[] = [];
  let active = 0;
  let maxActive = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const q = new SerialQueue<number>(10, async (n) => {
    active++;
    maxActive = Math.max(maxActive, active);
    await Promise.resolve();
    seen.push(n);
    active--;
    if (n === 4) done();
  });
  for (let i = 0; i < 5; i++) await q.push(i);
  await finished;
  assert.deepEqual(seen, [0, 1, 2, 3, 4]);
  assert.equal(maxActive, 1);
});

Deno.test("SerialQueue push blocks while the queue is full and resumes when it drains", async () => {
  const gates: (() => void)[] = [];
  const q = new SerialQueue<number>(2, () => new Promise<void>((r) => gates.push(r)));
  await q.push(1); // in progress
  let third = false;
  const p = q.push(2).then(() => (third = true)); // queue now holds 2 items: full
  await Promise.resolve();
  assert.equal(third, false, "the second push must wait while the queue is full");
  gates.shift()!();
  await p;
  assert.equal(third, true);
  while (gates.length) gates.shift()!();
  q.close();
});

Deno.test("SerialQueue keeps going after a failing item", async () => {
  const seen: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const q = new SerialQueue<number>(4, (n) => {
    if (n === 1) return Promise.reject(new Error("boom"));
    seen.push(n);
    if (n === 2) done();
    return Promise.resolve();
  });
  await q.push(1);
  await q.push(2);
  await finished;
  assert.deepEqual(seen, [2]);
});

/** Lets microtasks run until `cond()` holds, at most 1000 turns. */
async function settleUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await Promise.resolve();
  assert.ok(cond(), "condition reached");
}

Deno.test("SerialQueue starts the next item once the previous one hands back its completion", async () => {
  const started: number[] = [];
  const gates: (() => void)[] = [];
  const q = new SerialQueue<number>(3, (n) => {
    started.push(n);
    return Promise.resolve({ done: new Promise<void>((r) => gates.push(r)) });
  });
  const pushes = [0, 1, 2, 3, 4].map((n) => q.push(n));
  let released = 0;
  for (const p of pushes) p.then(() => released++);
  // Bounded by the capacity: three in flight, two waiting, every push over the bound held.
  await settleUntil(() => started.length >= 3);
  await Promise.resolve();
  assert.deepEqual(started, [0, 1, 2]);
  assert.equal(q.inFlight, 3);
  assert.equal(released, 2, "pushes at or over the capacity wait");
  gates.shift()!(); // 0 completes: 3 starts, still full
  await settleUntil(() => started.length >= 4);
  assert.deepEqual(started, [0, 1, 2, 3]);
  gates.shift()!();
  gates.shift()!(); // two complete: room again, every held push is released
  await Promise.all(pushes);
  await settleUntil(() => started.length >= 5);
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  while (gates.length) gates.shift()!();
  q.close();
});
