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
  assert.equal(q.push(1), undefined, "with room, push hands back nothing"); // in progress
  let third = false;
  const held = q.push(2); // queue now holds 2 items: full
  assert.ok(held instanceof Promise, "a full queue hands back a promise");
  const p = held.then(() => (third = true));
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

Deno.test("SerialQueue starts the next item once the previous one releases", async () => {
  const started: number[] = [];
  const gates: (() => void)[] = [];
  const q = new SerialQueue<number>(3, (n, release) => {
    started.push(n);
    const done = new Promise<void>((r) => gates.push(r));
    release();
    return done;
  });
  const pushes = [0, 1, 2, 3, 4].map((n) => Promise.resolve(q.push(n)));
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

Deno.test("SerialQueue never starts an item inside the one that released", async () => {
  const events: string[] = [];
  let depth = 0;
  const q = new SerialQueue<number>(8, (n, release) => {
    depth++;
    events.push(`start ${n} at depth ${depth}`);
    release();
    events.push(`released ${n}`);
    depth--;
    return new Promise<void>((r) => queueMicrotask(r));
  });
  for (let i = 0; i < 3; i++) void q.push(i);
  await settleUntil(() => events.length >= 6);
  assert.deepEqual(events, [
    "start 0 at depth 1",
    "released 0",
    "start 1 at depth 1",
    "released 1",
    "start 2 at depth 1",
    "released 2",
  ]);
});

Deno.test("SerialQueue: an item that does not release runs alone, after othersDone", async () => {
  const log: string[] = [];
  const gates = new Map<number, () => void>();
  const q: SerialQueue<number> = new SerialQueue<number>(8, (n, release): Promise<void> => {
    log.push(`start ${n}`);
    if (n === 2) {
      // A serial item: waits for the two pipelined ones before it, never releases.
      return q.othersDone().then(() => void log.push(`2 sees others done`));
    }
    release();
    return new Promise<void>((r) => gates.set(n, () => (log.push(`done ${n}`), r())));
  });
  for (const n of [0, 1, 2, 3]) void q.push(n);
  await settleUntil(() => log.length >= 3);
  assert.deepEqual(log, ["start 0", "start 1", "start 2"]);
  gates.get(1)!();
  await settleUntil(() => log.length >= 4);
  await Promise.resolve();
  assert.deepEqual(log, ["start 0", "start 1", "start 2", "done 1"], "0 is still running");
  gates.get(0)!();
  await settleUntil(() => log.length >= 7);
  assert.deepEqual(log, [
    "start 0",
    "start 1",
    "start 2",
    "done 1",
    "done 0",
    "2 sees others done",
    "start 3",
  ]);
  gates.get(3)!();
  await settleUntil(() => q.inFlight === 0);
  q.close();
});
