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
