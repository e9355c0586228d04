import assert from "node:assert/strict";
import { Semaphore } from "./semaphore.ts";

Deno.test("Semaphore never hands out more slots than it has and serves waiters in order", async () => {
  const s = new Semaphore(2);
  await s.acquire();
  await s.acquire();
  assert.equal(s.free, 0);
  const order: number[] = [];
  const a = s.acquire().then(() => order.push(1));
  const b = s.acquire().then(() => order.push(2));
  assert.equal(s.waiting, 2);
  s.release();
  await a;
  assert.deepEqual(order, [1]);
  s.release();
  await b;
  assert.deepEqual(order, [1, 2]);
  s.release();
  s.release();
  assert.equal(s.free, 2);
});
