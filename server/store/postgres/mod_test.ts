import assert from "node:assert/strict";
import { OpError } from "../op_error.ts";
import { StoreUnreachableError, StoreUnsupportedError } from "../store.ts";
import { openPostgresStore } from "./mod.ts";
import { PG_TEST_URL, pgIgnored, pgTestDb } from "./_testing.ts";

// openPostgresStore: the Store interface on a real PostgreSQL.

const OPEN = { maxBatch: 256, maxWaitMs: 2 };

Deno.test({
  name: "openPostgresStore migrates, writes through ops, reads through queries and is ready",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb({ migrate: false });
    const store = await openPostgresStore({ ...OPEN, url: db.url, schema: db.schema });
    try {
      assert.equal(store.kind, "postgres");
      await store.run("settings.set", { key: "registration_code", value: "abc" });
      assert.equal(await store.query("settings.get", { key: "registration_code" }), "abc");
      assert.equal(store.commits, 1);
      assert.equal(store.healthy, true);
      assert.equal(store.queueLength, 0);
      const batches: number[] = [];
      const off = store.onCommit((info) => batches.push(info.ops));
      assert.equal(await store.ready(), true);
      // A second check within the second shares the last probe: no new write.
      assert.equal(await store.ready(), true);
      off();
      assert.deepEqual(batches, [1]);
      await assert.rejects(
        () => store.query("group.get", { callerId: "a", groupId: "none", cursor: "", limit: 5 }),
        (e) => e instanceof OpError && e.code === "not_found",
      );
      await assert.rejects(
        () => store.backup("/tmp/never.db"),
        (e) => e instanceof StoreUnsupportedError && /pg_dump --format=custom/.test(e.message),
      );
      await store.afterHousekeeping();
    } finally {
      await store.close();
      await store.close();
      await db.drop();
    }
    assert.equal(store.closed, true);
    await assert.rejects(
      () => store.run("settings.set", { key: "registration_code", value: "late" }),
      (e) => e instanceof OpError && e.code === "busy",
    );
  },
});

Deno.test({
  name:
    "openPostgresStore reports an unreachable server as StoreUnreachableError, without the password",
  ignore: pgIgnored(),
  fn: async () => {
    const u = new URL(PG_TEST_URL!);
    u.port = "1"; // nothing listens there
    const err = await openPostgresStore({ ...OPEN, url: u.toString() }).then(
      () => assert.fail("a store on a closed port must not open"),
      (e) => e,
    );
    assert.ok(err instanceof StoreUnreachableError, String(err));
    assert.ok(!err.message.includes(u.password), "the password is never in the message");
    assert.match(err.message, /:\*\*\*@127\.0\.0\.1:1\//);
  },
});

Deno.test({
  name: "openPostgresStore fails for good on a wrong password",
  ignore: pgIgnored(),
  fn: async () => {
    const u = new URL(PG_TEST_URL!);
    u.password = "wrong-password";
    const err = await openPostgresStore({ ...OPEN, url: u.toString() }).then(
      () => assert.fail("a wrong password must not open"),
      (e) => e,
    );
    assert.ok(!(err instanceof StoreUnreachableError), String(err));
    assert.ok(!String(err.message).includes("wrong-password"));
  },
});
