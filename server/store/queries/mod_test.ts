import assert from "node:assert/strict";
import { join } from "node:path";
import { openSqliteStore } from "../sqlite_store.ts";
import { checkQueryContract } from "./_contract.ts";
import { queries } from "./mod.ts";

Deno.test("every query of the registry answers as its contract says on the SQLite store", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-queries-" });
  const now = Date.now();
  const store = await openSqliteStore({
    path: join(dir, "n.db"),
    backupDir: join(dir, "backup"),
    synchronous: "FULL",
    maxBatch: 256,
    maxWaitMs: 2,
    clock: () => now,
  });
  try {
    const checked = await checkQueryContract(store, now);
    assert.deepEqual(checked.sort(), Object.keys(queries).sort());
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
