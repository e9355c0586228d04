// `/readyz` (spec 4.3, 7.8): ready means a real write and a real read succeed now. It must fail
// while writes fail, however many empty batches still commit, and when the database file is
// damaged, even though the server's own reader still answers from its page cache.
import assert from "node:assert/strict";
import { WriteFault } from "./helpers/db_fault.ts";
import { sqliteOnly } from "./helpers/test_store.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";
import { dbPath } from "../server/app/paths.ts";

async function readyz(t: TestServer): Promise<number> {
  const res = await fetch(`${t.httpUrl}/readyz`);
  await res.body?.cancel();
  return res.status;
}

/** Polls `/readyz` until it answers `status`, at most `ms`. */
async function waitReadyz(t: TestServer, status: number, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  let last = 0;
  while (Date.now() < end) {
    last = await readyz(t);
    if (last === status) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`/readyz stayed ${last}, expected ${status}`);
}

Deno.test("/readyz answers 503 for as long as writes fail, though empty batches still commit", async () => {
  const t = await startTestServer();
  let fault: WriteFault | null = null;
  try {
    assert.equal(await readyz(t), 200);
    const commitsBefore = t.server.store.commits;
    fault = await WriteFault.on(t);
    await waitReadyz(t, 503);
    // Keep asking across more than two cache periods: every answer is 503, while the idle
    // expiry sweep (a batch that writes nothing) keeps committing and looks healthy.
    const end = Date.now() + 2500;
    let asked = 0;
    while (Date.now() < end) {
      assert.equal(await readyz(t), 503, `answer ${asked + 1} while writes fail`);
      asked++;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(asked >= 10);
    assert.ok(t.server.store.commits > commitsBefore, "empty batches committed meanwhile");
    await fault.off();
    fault = null;
    await waitReadyz(t, 200);
  } finally {
    await fault?.off();
    await t.close();
  }
});

// SQLite only: it truncates the database file (a PostgreSQL store has no file; its outage is
// tests/postgres_outage_test.ts).
Deno.test({
  name: "/readyz answers 503 once the database file is truncated",
  ignore: sqliteOnly(),
}, async () => {
  const t = await startTestServer();
  try {
    for (let i = 0; i < 40; i++) await t.createEndpoint(`e${i}`, "device-password-1");
    assert.equal(await readyz(t), 200);
    const f = await Deno.open(dbPath(t.dataDir), { write: true });
    await f.truncate(4096);
    f.close();
    const w = await Deno.open(`${dbPath(t.dataDir)}-wal`, { write: true });
    await w.truncate(0);
    w.close();
    await waitReadyz(t, 503);
    const end = Date.now() + 1500;
    while (Date.now() < end) {
      assert.equal(await readyz(t), 503);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await t.close();
  }
});
