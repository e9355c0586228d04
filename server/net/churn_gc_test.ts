import assert from "node:assert/strict";
import { ChurnGc, exposedGc, MMAP_THRESHOLD_BYTES, tuneMemory } from "./churn_gc.ts";

Deno.test("a churn GC runs after every `every` closes, at most once per interval", () => {
  let now = 0;
  let gcs = 0;
  const churn = new ChurnGc({
    gc: () => gcs++,
    every: 3,
    minIntervalMs: 100,
    idleMs: 60_000,
    idleMin: 1,
    now: () => now,
  });
  try {
    churn.closed();
    churn.closed();
    assert.equal(gcs, 0, "two closes are below the count");
    churn.closed();
    assert.equal(gcs, 1, "the third close runs one");
    for (let i = 0; i < 5; i++) churn.closed();
    assert.equal(gcs, 1, "within the interval the count waits");
    now = 150;
    churn.closed();
    assert.equal(gcs, 2, "the first close after the interval runs the waiting one");
    assert.equal(churn.runs, 2);
  } finally {
    churn.close();
  }
});

Deno.test("the tail of a burst gets one GC a little later, a trickle below the minimum none", async () => {
  let gcs = 0;
  const { promise, resolve } = Promise.withResolvers<void>();
  const churn = new ChurnGc({
    gc: () => {
      gcs++;
      resolve();
    },
    every: 1000,
    idleMs: 20,
    idleMin: 3,
  });
  try {
    churn.closed();
    churn.closed();
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(gcs, 0, "two closes are below the minimum");
    churn.closed();
    // The idle timer is unref'd (it never holds the process open): this one keeps the test alive.
    let guard: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => (guard = setTimeout(r, 5000)));
    await Promise.race([promise, late]);
    clearTimeout(guard);
    assert.equal(gcs, 1, "one idle GC within 5 s");
  } finally {
    churn.close();
  }
});

Deno.test("without an exposed gc nothing runs", () => {
  const churn = new ChurnGc({ gc: null, every: 1, idleMs: 1 });
  for (let i = 0; i < 10; i++) churn.closed();
  assert.equal(churn.runs, 0);
  churn.close();
});

Deno.test("tuneMemory fixes glibc's mmap threshold and reports whether gc is exposed", () => {
  const t = tuneMemory();
  assert.equal(t.churnGc, exposedGc() !== null);
  if (Deno.build.os === "linux" && t.problem === null) {
    assert.equal(t.mmapThreshold, MMAP_THRESHOLD_BYTES);
  }
});
