import assert from "node:assert/strict";
import { join } from "node:path";
import { backupDatabase } from "./backup.ts";
import { openDb } from "./db.ts";
import { currentVersion, migrate, SCHEMA_VERSION } from "./migrations.ts";
import { Writer } from "./writer.ts";

Deno.test("backupDatabase() copies a consistent database while the writer is writing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-backup-" });
  const path = join(dir, "nixmsg.db");
  const out = join(dir, "copy.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start({ path, synchronous: "NORMAL" });
  let writing = true;
  let written = 0;
  const load = (async () => {
    while (writing) {
      const runs = Array.from(
        { length: 64 },
        (_, i) => writer.run("settings.set", { key: `k${written + i}`, value: "x".repeat(512) }),
      );
      await Promise.all(runs);
      written += runs.length;
    }
  })();
  try {
    // Back up only once the writer has committed something, while it keeps going.
    await new Promise<void>((resolve) => {
      const off = writer.onCommit(() => {
        off();
        resolve();
      });
    });
    await backupDatabase(path, out);
    writing = false;
    await load;

    const copy = openDb(out, { readOnly: true });
    try {
      assert.deepEqual({ ...(copy.prepare("PRAGMA integrity_check").get() as object) }, {
        integrity_check: "ok",
      });
      // One file that opens on its own: a rollback journal, no -wal beside it.
      assert.deepEqual({ ...(copy.prepare("PRAGMA journal_mode").get() as object) }, {
        journal_mode: "delete",
      });
      assert.equal(currentVersion(copy), SCHEMA_VERSION);
      const n = (copy.prepare("SELECT count(*) AS n FROM settings").get() as { n: number }).n;
      assert.ok(n > 0 && n <= written, `copy holds ${n} of ${written} rows`);
      // Whole batches only: the copy is one committed snapshot.
      assert.equal(n % 64, 0);
    } finally {
      copy.close();
    }
  } finally {
    writing = false;
    await load;
    await writer.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("backupDatabase() refuses to overwrite an existing file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-backup-" });
  const path = join(dir, "nixmsg.db");
  const out = join(dir, "copy.db");
  try {
    await migrate(path, { backupDir: join(dir, "backup") });
    await Deno.writeTextFile(out, "keep me");
    await assert.rejects(() => backupDatabase(path, out), /Backup file already exists/);
    assert.equal(await Deno.readTextFile(out), "keep me");
    await assert.rejects(
      () => backupDatabase(join(dir, "missing.db"), join(dir, "b.db")),
      /not found/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
