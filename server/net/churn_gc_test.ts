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

Deno.test("a growth GC runs when the open connections grew by the share since the last GC", () => {
  let now = 0;
  let gcs = 0;
  const churn = new ChurnGc({
    gc: () => gcs++,
    every: 1000,
    minIntervalMs: 100,
    idleMs: 60_000,
    idleMin: 1000,
    growthShare: 1 / 2,
    growthMin: 4,
    now: () => now,
  });
  try {
    for (let i = 0; i < 3; i++) churn.opened();
    assert.equal(gcs, 0, "three opens are below the minimum");
    churn.opened();
    assert.equal(gcs, 1, "the fourth runs one (4 open)");
    now = 1000;
    for (let i = 0; i < 3; i++) churn.opened();
    assert.equal(gcs, 1, "three more are below the minimum of 4");
    churn.opened();
    assert.equal(gcs, 2, "8 open: grown by 4, the minimum and half of 4");
    now = 2000;
    for (let i = 0; i < 3; i++) churn.opened();
    assert.equal(gcs, 2, "11 open: grown by 3 < half of 8");
    churn.opened();
    assert.equal(gcs, 3, "12 open: grown by half of 8");
    for (let i = 0; i < 6; i++) churn.opened();
    assert.equal(gcs, 3, "within the interval the growth waits");
    now = 2200;
    churn.opened();
    assert.equal(gcs, 4, "the first open after the interval runs the waiting one");
    // Closing and reopening the same number is churn, not growth: the close count handles it.
    for (let i = 0; i < 10; i++) churn.closed();
    now = 5000;
    for (let i = 0; i < 10; i++) churn.opened();
    assert.equal(gcs, 4, "back to 19 open, no growth past the last GC's 19");
    // A close-count GC at a lower level does not lower the mark either.
    for (let i = 0; i < 1000; i++) churn.closed(); // 0 open; `every` closes: one GC
    assert.equal(gcs, 5);
    now = 6000;
    for (let i = 0; i < 19; i++) churn.opened();
    assert.equal(gcs, 5, "churn back up to the mark");
  } finally {
    churn.close();
  }
});

Deno.test("after a quiet moment growth counts from what is open", async () => {
  let now = 0;
  let gcs = 0;
  const churn = new ChurnGc({
    gc: () => gcs++,
    every: 1000,
    minIntervalMs: 0,
    idleMs: 10,
    idleMin: 1000,
    growthShare: 1 / 2,
    growthMin: 4,
    now: () => now,
  });
  try {
    for (let i = 0; i < 8; i++) churn.opened();
    assert.equal(gcs, 2, "at 4 and at 8 open");
    for (let i = 0; i < 6; i++) churn.closed(); // 2 open, the mark stays at 8
    now = 100;
    // The idle timer (unref'd) sets the mark to what is open; this keeps the test alive.
    await new Promise((r) => setTimeout(r, 60));
    for (let i = 0; i < 3; i++) churn.opened();
    assert.equal(gcs, 2, "5 open, grown by 3 from 2");
    churn.opened();
    assert.equal(gcs, 3, "6 open, grown by 4 from the quiet level of 2");
  } finally {
    churn.close();
  }
});

Deno.test("the tail of a growth burst gets one GC a little later", async () => {
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
    growthMin: 1000,
  });
  try {
    churn.opened();
    churn.opened();
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(gcs, 0, "two opens are below the minimum");
    churn.opened();
    let guard: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => (guard = setTimeout(r, 5000)));
    await Promise.race([promise, late]);
    clearTimeout(guard);
    assert.equal(gcs, 1, "one idle GC within 5 s");
  } finally {
    churn.close();
  }
});

Deno.test("a steady stream of logins gets no idle GC until it stops", async () => {
  let gcs = 0;
  let stoppedAt = Infinity;
  let gcAt = -1;
  const { promise, resolve } = Promise.withResolvers<void>();
  const churn = new ChurnGc({
    gc: () => {
      gcs++;
      gcAt = performance.now();
      resolve();
    },
    every: 1000,
    idleMs: 40,
    idleMin: 3,
    growthMin: 100_000,
  });
  try {
    // 30 opens 10 ms apart (300 ms, seven idle periods long), each well inside the idle period.
    for (let i = 0; i < 30; i++) {
      churn.opened();
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(gcs, 0, "no idle GC while logins keep coming");
    stoppedAt = performance.now();
    let guard: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => (guard = setTimeout(r, 5000)));
    await Promise.race([promise, late]);
    clearTimeout(guard);
    assert.equal(gcs, 1, "one idle GC after the stream stopped, within 5 s");
    assert.ok(gcAt >= stoppedAt, "it ran after the last login");
  } finally {
    churn.close();
  }
});

Deno.test("without an exposed gc nothing runs", () => {
  const churn = new ChurnGc({ gc: null, every: 1, idleMs: 1 });
  for (let i = 0; i < 10; i++) churn.closed();
  for (let i = 0; i < 1000; i++) churn.opened();
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
