import assert from "node:assert/strict";
import { backoffMs, eventIdOf } from "./dispatcher.ts";

Deno.test("backoffMs() doubles from the first pause up to the cap, with 50-100 % jitter", () => {
  const top = () => 0.999999;
  const bottom = () => 0;
  assert.deepEqual([1, 2, 3, 4].map((n) => backoffMs(n, 1000, 60_000, top)), [
    1000,
    2000,
    4000,
    8000,
  ]);
  assert.equal(backoffMs(1, 1000, 60_000, bottom), 500);
  assert.equal(backoffMs(40, 1000, 60_000, top), 60_000);
});

Deno.test("eventIdOf() names each event kind by its stable key", () => {
  assert.equal(eventIdOf("msg", 7), "msg_7");
  assert.equal(eventIdOf("receipt", 9), "rcpt_9");
  assert.equal(eventIdOf("revoked", 7), "rvk_7");
});
