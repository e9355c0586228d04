// One server per data directory (issue 10 item 9): a second `serve` on the same data_dir exits
// non-zero, names the directory and leaves the first server, its database and listen.addr alone.
import assert from "node:assert/strict";
import { join } from "node:path";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { StartupError } from "../server/app/server.ts";

Deno.test("a second serve on the same data_dir exits 1 naming the directory, and the first keeps serving", async () => {
  const home = await makeTestHome();
  try {
    assert.equal((await runCli(home, ["admin", "init"])).code, 0);
    const first = await startServerProcess(home);
    try {
      const addrFile = join(home.dataDir, "listen.addr");
      const addr = await Deno.readTextFile(addrFile);
      // startServerProcess rejects, with the output, when the process exits before serving.
      let refusal = "";
      try {
        const second = await startServerProcess(home, 20_000);
        await second.stop();
        assert.fail("a second server started on the same data_dir");
      } catch (err) {
        refusal = (err as Error).message;
      }
      assert.match(refusal, /Server did not start \(exited\)/);
      assert.ok(refusal.includes(`Data directory ${home.dataDir} is in use`), refusal);
      const exit = await runCli(home, ["serve"]); // exits at once, as just shown
      assert.equal(exit.code, 1, exit.stderr);
      assert.equal(await Deno.readTextFile(addrFile), addr, "listen.addr is left alone");
      const health = await fetch(`http://${first.addr}/readyz`);
      await health.body?.cancel();
      assert.equal(health.status, 200, "the first server still serves");
    } finally {
      assert.equal(await first.stop(), 0);
    }
    // The lock goes with its process: the directory can be served again.
    const third = await startServerProcess(home);
    const ready = await fetch(`http://${third.addr}/readyz`);
    await ready.body?.cancel();
    assert.equal(ready.status, 200);
    assert.equal(await third.stop(), 0);
  } finally {
    await home.cleanup();
  }
});

Deno.test("in one process, a second server on the same data_dir is refused until the first closes", async () => {
  const t = await startTestServer();
  let closed = false;
  try {
    await assert.rejects(
      () => startTestServer({}, { dataDir: t.dataDir }),
      (err: Error) => err instanceof StartupError && err.message.includes(t.dataDir),
    );
    await t.close();
    closed = true;
    const again = await startTestServer({}, { dataDir: t.dataDir });
    await again.close();
  } finally {
    if (!closed) await t.close();
  }
});
