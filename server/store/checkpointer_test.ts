import assert from "node:assert/strict";
import { join } from "node:path";
import { Checkpointer } from "./checkpointer.ts";
import { migrate } from "./migrations.ts";
import { Writer } from "./writer.ts";

Deno.test("the checkpointer copies committed WAL frames into the database file beside the writer", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start({ path, synchronous: "FULL" });
  const cp = Checkpointer.start(path, "FULL", 20);
  try {
    for (let i = 0; i < 200; i++) {
      await writer.run("settings.set", { key: `k${i}`, value: "x".repeat(2000) });
    }
    const deadline = Date.now() + 5000;
    while (!(cp.last && cp.last.checkpointed > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20)); // bounded poll of the Worker's reports
    }
    assert.ok(cp.runs > 0, "the checkpointer ran");
    assert.ok(
      cp.last && cp.last.checkpointed > 0,
      `frames were checkpointed: ${JSON.stringify(cp.last)}`,
    );
    assert.ok(cp.last.log >= cp.last.checkpointed);
  } finally {
    await cp.close();
    await writer.close();
    await Deno.remove(dir, { recursive: true });
  }
});
