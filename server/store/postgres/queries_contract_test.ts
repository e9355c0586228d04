import assert from "node:assert/strict";
import { checkQueryContract } from "../queries/_contract.ts";
import { queries } from "../queries/mod.ts";
import { openPostgresStore } from "./mod.ts";
import { pgIgnored, pgTestDb } from "./_testing.ts";

// The read side's contract of server/store/queries/_contract.ts (which the SQLite store runs in
// queries/mod_test.ts), run through the PostgreSQL store.

Deno.test({
  name: "every query of the registry answers as its contract says on the PostgreSQL store",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb({ migrate: false });
    const now = Date.now();
    const store = await openPostgresStore({
      url: db.url,
      schema: db.schema,
      maxBatch: 256,
      maxWaitMs: 2,
      clock: () => now,
    });
    try {
      const checked = await checkQueryContract(store, now);
      assert.deepEqual(checked.sort(), Object.keys(queries).sort());
    } finally {
      await store.close();
      await db.drop();
    }
  },
});
