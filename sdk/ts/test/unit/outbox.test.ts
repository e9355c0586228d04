import assert from "node:assert/strict";
import { test } from "node:test";
import { Outbox, TURN_BYTES } from "../../src/outbox.ts";

/** Resolves after the next macrotask turn. */
const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

test("Outbox writes small frames at once and in order", () => {
  const written: string[] = [];
  const box = new Outbox((j) => written.push(j));
  box.push("a");
  box.push("b");
  assert.deepEqual(written, ["a", "b"]);
  assert.equal(box.pending, 0);
  box.clear();
});

test("Outbox spreads large frames over turns so no turn exceeds its byte limit", async () => {
  const turns: number[][] = [[]];
  let turn = 0;
  const box = new Outbox((j) => turns[turn]!.push(j.length), TURN_BYTES);
  const big = "x".repeat(200 * 1024);
  for (let i = 0; i < 6; i++) box.push(big);
  assert.deepEqual(turns[0], [big.length, big.length], "two 200 KiB frames fit in 512 KiB");
  assert.equal(box.pending, 4);
  while (box.pending > 0) {
    turns.push([]);
    turn++;
    await nextTurn();
  }
  const sizes = turns.map((t) => t.reduce((a, b) => a + b, 0));
  assert.ok(sizes.every((s) => s <= TURN_BYTES), JSON.stringify(sizes));
  assert.equal(turns.flat().length, 6, "every frame is written exactly once");
  box.clear();
});

test("Outbox writes a single frame larger than the limit on its own", () => {
  const written: number[] = [];
  const box = new Outbox((j) => written.push(j.length), 1000);
  box.push("y".repeat(5000));
  assert.deepEqual(written, [5000]);
  box.push("z");
  assert.deepEqual(written, [5000], "the next frame waits for the next turn");
  box.clear();
  assert.equal(box.pending, 0);
});
