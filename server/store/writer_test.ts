import assert from "node:assert/strict";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { migrate } from "./migrations.ts";
import { OpError } from "./op_error.ts";
import { getSetting } from "./ops/settings.ts";
import { openReader } from "./reader.ts";
import type { TestOps } from "./testdata/writer_test_ops.ts";
import { type CommitInfo, Writer, type WriterOptions } from "./writer.ts";

const TEST_OPS = new URL("./testdata/writer_test_ops.ts", import.meta.url).href;

interface Fixture {
  writer: Writer<TestOps>;
  reader: DatabaseSync;
  path: string;
  [Symbol.asyncDispose](): Promise<void>;
}

async function fixture(opts: Partial<WriterOptions> = {}): Promise<Fixture> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-writer-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start<TestOps>({ path, opsModule: TEST_OPS, ...opts });
  const reader = openReader(path);
  return {
    writer,
    reader,
    path,
    async [Symbol.asyncDispose]() {
      await writer.close();
      reader.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function has(reader: DatabaseSync, key: string): boolean {
  return getSetting(reader, key) !== undefined;
}

async function rejection(promise: Promise<unknown>): Promise<OpError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OpError, `expected an OpError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the op to be rejected");
}

Deno.test("ops queued together are committed in one transaction", async () => {
  await using f = await fixture();
  const batches: CommitInfo[] = [];
  f.writer.onCommit((info) => batches.push(info));
  const runs = Array.from({ length: 100 }, (_, i) => f.writer.run("test.put", { key: `k${i}` }));
  assert.equal(f.writer.queueLength, 100);
  const results = await Promise.all(runs);
  assert.deepEqual(results, Array.from({ length: 100 }, (_, i) => ({ key: `k${i}` })));
  // spec 7.2: one transaction for the queued ops, not one per op.
  assert.ok(f.writer.commits <= 3, `expected at most 3 commits, got ${f.writer.commits}`);
  assert.equal(batches.reduce((n, b) => n + b.ops, 0), 100);
  assert.ok(batches.every((b) => b.ok));
  assert.equal(f.writer.queueLength, 0);
  assert.equal(
    (f.reader.prepare("SELECT count(*) AS n FROM settings").get() as { n: number }).n,
    100,
  );
});

Deno.test("an idle writer commits an op at once instead of waiting to fill a batch", async () => {
  // DESIGN verified item 12: with the default maxWaitMs (0) an op alone costs one commit. A 1 s
  // linger shows what a fixed wait would cost, and that a full batch never waits for it.
  const elapsed = async (f: Fixture, keys: string[]) => {
    const started = performance.now();
    await Promise.all(keys.map((key) => f.writer.run("test.put", { key })));
    return performance.now() - started;
  };
  {
    await using f = await fixture();
    const ms = await elapsed(f, ["alone"]);
    assert.ok(ms < 1_000, `an op on an idle writer took ${ms.toFixed(1)} ms`);
    assert.equal(f.writer.commits, 1);
  }
  {
    await using f = await fixture({ maxWaitMs: 1_000 });
    const ms = await elapsed(f, ["lingered"]);
    assert.ok(ms >= 990, `a 1 s linger ended after ${ms.toFixed(1)} ms`);
  }
  {
    await using f = await fixture({ maxWaitMs: 60_000, maxBatch: 4 });
    const ms = await elapsed(f, ["f1", "f2", "f3", "f4"]);
    assert.ok(ms < 30_000, `a full batch waited ${ms.toFixed(1)} ms`);
    assert.equal(f.writer.commits, 1);
  }
});

Deno.test("ops queued while a commit runs form the next batch, at most maxBatch each", async () => {
  await using f = await fixture({ maxBatch: 16 });
  const batches: number[] = [];
  f.writer.onCommit((info) => batches.push(info.ops));
  const keys: string[] = [];
  // Its callback queues a follow-up op the moment the slow batch is answered.
  let slowDone = false;
  const slow = f.writer.run("test.slow_put", { key: "slow", ms: 3_000 }).then(() => {
    slowDone = true;
    keys.push("follow-up");
    return f.writer.run("test.put", { key: "follow-up" });
  });
  const runs: Promise<unknown>[] = [];
  // 40 ops, each in its own tick of the main thread, all while the slow commit runs.
  for (let i = 0; i < 40; i++) {
    await new Promise<void>((tick) => setTimeout(tick, 0));
    assert.ok(!slowDone, `the slow commit ended before op ${i} was queued`);
    keys.push(`during${i}`);
    runs.push(f.writer.run("test.put", { key: `during${i}` }));
  }
  await Promise.all([slow, ...runs]);
  // Transactions of at most maxBatch; the follow-up joins the ops queued during the commit.
  assert.deepEqual(batches, [1, 16, 16, 9], `batches ${batches.join(", ")}`);
  const stored = f.reader.prepare("SELECT count(*) AS n FROM settings").get() as { n: number };
  assert.equal(stored.n, keys.length + 1, `${keys.length + 1 - stored.n} ops lost`);
});

Deno.test("a failing op rolls back only itself while its batch mates commit", async () => {
  await using f = await fixture();
  const a = f.writer.run("test.put", { key: "a" });
  const b = f.writer.run("test.put_then_conflict", { key: "b" });
  const c = f.writer.run("test.put_then_crash", { key: "c" });
  const d = f.writer.run("test.put", { key: "d" });

  assert.deepEqual(await a, { key: "a" });
  const conflict = await rejection(b);
  assert.equal(conflict.code, "conflict");
  assert.equal(conflict.message, "Key is taken");
  assert.deepEqual(conflict.data, { key: "b", n: 1 });
  const crash = await rejection(c);
  assert.equal(crash.code, "busy");
  assert.equal(crash.cause, "Boom c");
  assert.deepEqual(await d, { key: "d" });

  assert.equal(f.writer.commits, 1);
  assert.ok(f.writer.healthy);
  assert.deepEqual(["a", "b", "c", "d"].map((k) => has(f.reader, k)), [true, false, false, true]);
});

Deno.test("ops run and settle in FIFO order across batches", async () => {
  await using f = await fixture({ maxBatch: 16 });
  const settled: number[] = [];
  const runs = Array.from(
    { length: 300 },
    (_, i) =>
      f.writer.run("test.append", { prefix: "fifo.", i }).then((before) => {
        settled.push(i);
        return before;
      }),
  );
  const before = await Promise.all(runs);
  // Each op saw exactly the rows of the ops queued before it.
  assert.deepEqual(before, Array.from({ length: 300 }, (_, i) => i));
  assert.deepEqual(settled, Array.from({ length: 300 }, (_, i) => i));
  assert.ok(f.writer.commits >= 300 / 16, `batches hold at most 16, got ${f.writer.commits}`);
});

Deno.test("a failed COMMIT rejects its whole batch with busy until a later commit succeeds", async () => {
  await using f = await fixture();
  const batches: CommitInfo[] = [];
  f.writer.onCommit((info) => batches.push(info));
  const runs = [
    f.writer.run("test.put", { key: "x" }),
    f.writer.run("test.break_commit", {}),
    f.writer.run("test.put", { key: "y" }),
  ];
  for (const run of runs) {
    const err = await rejection(run);
    assert.equal(err.code, "busy");
    assert.match(String(err.cause), /FOREIGN KEY/);
  }
  // spec 7.8: nothing uncommitted is answered as success, and readiness fails.
  assert.equal(f.writer.healthy, false);
  assert.equal(f.writer.commits, 0);
  assert.deepEqual(batches, [{ ops: 3, ms: batches[0].ms, ok: false }]);
  assert.equal(has(f.reader, "x"), false);
  assert.equal(has(f.reader, "y"), false);

  assert.deepEqual(await f.writer.run("test.put", { key: "z" }), { key: "z" });
  assert.equal(f.writer.healthy, true);
  assert.equal(f.writer.commits, 1);
  assert.equal(has(f.reader, "z"), true);
});

Deno.test("an op settles only after its batch is visible to another connection", async () => {
  await using f = await fixture();
  // The slow op keeps the transaction open after "early" has run: an answer before COMMIT would
  // arrive while neither row is visible.
  const seen = f.writer.run("test.put", { key: "early" }).then(() => ({
    early: has(f.reader, "early"),
    late: has(f.reader, "late"),
  }));
  const late = f.writer.run("test.slow_put", { key: "late", ms: 100 });
  assert.deepEqual(await seen, { early: true, late: true });
  await late;
});

Deno.test("close() commits the queued ops before it terminates the Worker", async () => {
  await using f = await fixture();
  const runs = Array.from({ length: 50 }, (_, i) => f.writer.run("test.put", { key: `q${i}` }));
  const closed = f.writer.close();
  const late = await rejection(f.writer.run("test.put", { key: "too-late" }));
  assert.equal(late.code, "busy");
  const results = await Promise.allSettled(runs);
  await closed;
  assert.ok(results.every((r) => r.status === "fulfilled"));
  assert.equal(f.writer.queueLength, 0);
  assert.equal(
    (f.reader.prepare("SELECT count(*) AS n FROM settings").get() as { n: number }).n,
    50,
  );
});

Deno.test("close() rejects ops still queued when the drain time runs out", async () => {
  await using f = await fixture();
  const slow = f.writer.run("test.slow_put", { key: "slow", ms: 2_000 });
  const next = f.writer.run("test.put", { key: "next" });
  const started = performance.now();
  await f.writer.close(50);
  assert.ok(performance.now() - started < 1_500, "close waited for the slow op");
  assert.equal((await rejection(slow)).code, "busy");
  assert.equal((await rejection(next)).code, "busy");
  assert.equal(f.writer.queueLength, 0);
});

Deno.test("ops get the clock at enqueue time and plain data both ways", async () => {
  let t = 1_000;
  await using f = await fixture({ clock: () => t++ });
  const bytes = new Uint8Array([0, 1, 254, 255]);
  const first = await f.writer.run("test.echo", { bytes, list: [1, 2] });
  const second = await f.writer.run("test.echo", { bytes, list: [] });
  assert.deepEqual(first, { args: { bytes, list: [1, 2] }, now: 1_000 });
  assert.ok(first.args.bytes instanceof Uint8Array);
  assert.equal(second.now, 1_001);
});

Deno.test("a result that cannot be cloned fails only its own op", async () => {
  await using f = await fixture();
  const bad = f.writer.run("test.return_function", {});
  const good = f.writer.run("test.put", { key: "fine" });
  const err = await rejection(bad);
  assert.equal(err.code, "busy");
  assert.match(String(err.cause), /not cloneable/);
  assert.deepEqual(await good, { key: "fine" });
});

Deno.test("args that cannot be cloned fail only their own op", async () => {
  await using f = await fixture();
  const args = { key: "k", value: (() => "x") as unknown as string };
  const bad = f.writer.run("test.put", args);
  const good = f.writer.run("test.put", { key: "ok" });
  assert.equal((await rejection(bad)).code, "busy");
  assert.deepEqual(await good, { key: "ok" });
});

Deno.test("onCommit() listeners can unsubscribe and a throwing one breaks nothing", async () => {
  await using f = await fixture();
  const seen: boolean[] = [];
  f.writer.onCommit(() => {
    throw new Error("Listener bug");
  });
  const off = f.writer.onCommit((info) => seen.push(info.ok));
  assert.deepEqual(await f.writer.run("test.put", { key: "one" }), { key: "one" });
  off();
  assert.deepEqual(await f.writer.run("test.put", { key: "two" }), { key: "two" });
  assert.deepEqual(seen, [true]);
  assert.equal(f.writer.commits, 2);
});

Deno.test("an unknown op is rejected with busy", async () => {
  await using f = await fixture();
  const err = await rejection(f.writer.run("no.such_op" as "test.put", { key: "k" }));
  assert.equal(err.code, "busy");
  assert.match(String(err.cause), /Unknown op no\.such_op/);
});

Deno.test("the built-in registry serves settings ops", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-writer-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start({ path, synchronous: "NORMAL", clock: () => 42 });
  const reader = openReader(path);
  try {
    await writer.run("settings.set", { key: "registration_enabled", value: "true" });
    assert.equal(getSetting(reader, "registration_enabled"), "true");
    assert.equal(await writer.run("settings.delete", { key: "registration_enabled" }), true);
    assert.equal(getSetting(reader, "registration_enabled"), undefined);
  } finally {
    await writer.close();
    reader.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Writer.start() fails when the database cannot be opened", async () => {
  await assert.rejects(
    Writer.start({ path: "/nonexistent-dir/x/nixmsg.db" }),
    /Writer failed to start: .*unable to open/,
  );
});
