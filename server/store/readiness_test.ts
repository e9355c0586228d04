import assert from "node:assert/strict";
import { join } from "node:path";
import { migrate } from "./migrations.ts";
import { openDb } from "./db.ts";
import { Readiness } from "./readiness.ts";
import { Writer } from "./writer.ts";

async function withWriter(fn: (writer: Writer, path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-ready-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start({ path });
  try {
    await fn(writer, path);
  } finally {
    await writer.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Readiness commits one probe, reuses a success for cacheMs and shares concurrent checks", () =>
  withWriter(async (writer, path) => {
    const readiness = new Readiness(writer, { path, cacheMs: 60_000 });
    const before = writer.commits;
    const answers = await Promise.all([readiness.check(), readiness.check(), readiness.check()]);
    assert.deepEqual(answers, [true, true, true]);
    assert.equal(writer.commits, before + 1, "one probe for three concurrent checks");
    assert.equal(await readiness.check(), true);
    assert.equal(writer.commits, before + 1, "reused within cacheMs");
  }));

Deno.test("Readiness fails while the write lock is held elsewhere and probes again at once after", () =>
  withWriter(async (writer, path) => {
    const readiness = new Readiness(writer, { path, cacheMs: 60_000, timeoutMs: 300 });
    const locker = openDb(path);
    try {
      locker.exec("BEGIN IMMEDIATE"); // the writer's BEGIN waits out busy_timeout
      assert.equal(await readiness.check(), false);
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
    // A failure is not reused: the next check probes, and succeeds once the queued probe lands.
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) ok = await readiness.check();
    assert.equal(ok, true);
  }));

Deno.test("Readiness fails once the writer is closed", () =>
  withWriter(async (writer, path) => {
    const readiness = new Readiness(writer, { path });
    await writer.close();
    assert.equal(await readiness.check(), false);
  }));
