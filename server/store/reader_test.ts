import assert from "node:assert/strict";
import { join } from "node:path";
import { openDb } from "./db.ts";
import { openReader } from "./reader.ts";

Deno.test("openReader() sees committed rows and cannot write", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-reader-" });
  const path = join(dir, "a.db");
  const writer = openDb(path);
  writer.exec("CREATE TABLE t (x INTEGER)");
  const reader = openReader(path);
  try {
    writer.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)");
    // spec 7.2: in WAL mode the reader is not blocked by an open write transaction.
    assert.deepEqual({ ...(reader.prepare("SELECT count(*) AS n FROM t").get() as object) }, {
      n: 0,
    });
    writer.exec("COMMIT");
    assert.deepEqual({ ...(reader.prepare("SELECT count(*) AS n FROM t").get() as object) }, {
      n: 1,
    });
    assert.throws(() => reader.exec("DELETE FROM t"), /readonly/);
  } finally {
    reader.close();
    writer.close();
    await Deno.remove(dir, { recursive: true });
  }
});
