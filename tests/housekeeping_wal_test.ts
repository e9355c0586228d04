// The hourly `wal_checkpoint(TRUNCATE)` (spec 7.6) waits for readers on older snapshots and for
// the writer. It runs in the checkpointer's Worker, so the main thread keeps serving meanwhile.
import assert from "node:assert/strict";
import { startTestServer } from "./helpers/test_server.ts";
import { dbPath } from "../server/app/paths.ts";
import { openReader } from "../server/store/reader.ts";

Deno.test("housekeeping's WAL truncate waits off the main thread, which keeps answering HTTP", async () => {
  const t = await startTestServer();
  const reader = openReader(dbPath(t.dataDir));
  try {
    // A reader on an old snapshot: TRUNCATE must wait for it (up to busy_timeout, 5 s).
    reader.exec("BEGIN");
    reader.prepare("SELECT count(*) FROM endpoints").get();
    for (let i = 0; i < 20; i++) await t.createEndpoint(`e${i}`, "device-password-1");

    let done = false;
    const housekeeping = t.server.messaging.housekeeping().then((r) => {
      done = true;
      return r;
    });
    // While it waits, HTTP is served at once: the event loop is free.
    const started = performance.now();
    const res = await fetch(`${t.httpUrl}/healthz`);
    await res.body?.cancel();
    const ms = performance.now() - started;
    assert.equal(res.status, 200);
    assert.ok(ms < 1000, `/healthz took ${Math.round(ms)} ms while the truncate waited`);
    assert.equal(done, false, "the truncate is still waiting for the old reader");

    reader.exec("COMMIT");
    await housekeeping;
    assert.equal(done, true);
    // Once the reader let go, the truncate emptied the WAL file.
    assert.equal(Deno.statSync(`${dbPath(t.dataDir)}-wal`).size, 0);
  } finally {
    if (reader.isTransaction) reader.exec("COMMIT");
    reader.close();
    await t.close();
  }
});
