import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { OpError } from "../op_error.ts";
import type { Store } from "../store.ts";
import { openPostgresStore } from "./mod.ts";
import { pgIgnored } from "./_testing.ts";

// A PostgreSQL outage while the store runs (issue 29 item 5): writes answer busy while the
// server is down, nothing answered ok is lost, and the store recovers without being reopened.
// This test starts a PostgreSQL of its own (scripts/test_postgres.sh), as it stops it.

const SCRIPT = fileURLToPath(new URL("../../../scripts/test_postgres.sh", import.meta.url));

async function script(...args: string[]): Promise<string> {
  const out = await new Deno.Command("bash", { args: [SCRIPT, ...args], stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`test_postgres.sh ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

function exported(env: string, name: string): string {
  const m = env.match(new RegExp(`^export ${name}='([^']*)'$`, "m"));
  if (m === null) throw new Error(`test_postgres.sh printed no ${name}`);
  return m[1];
}

function create(store: Store, id: string) {
  return store.run("endpoint.create", {
    id,
    name: id,
    remark: "",
    source: "admin",
    loginHash: "h",
    talkHash: null,
    defaultDelayMs: 0,
  });
}

Deno.test({
  name:
    "a PostgreSQL restart: busy while down, nothing answered ok is lost, recovery without reopen",
  ignore: pgIgnored(),
  fn: async () => {
    const env = await script("start");
    const url = exported(env, "NIXMSG_TEST_POSTGRES_URL");
    const dir = exported(env, "NIXMSG_TEST_POSTGRES_DIR");
    let store: Store | undefined;
    try {
      store = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2 });
      const ok: string[] = [];
      for (let i = 0; i < 20; i++) {
        await create(store, `before${i}`);
        ok.push(`before${i}`);
      }
      await script("pause", dir);
      const down = await Promise.allSettled([0, 1, 2].map((i) => create(store!, `down${i}`)));
      for (const r of down) {
        assert.ok(r.status === "rejected" && r.reason instanceof OpError, JSON.stringify(r));
        assert.equal(r.reason.code, "busy");
      }
      assert.equal(store.healthy, false);
      assert.equal(await store.ready(), false);
      await script("resume", dir);
      // The pool reconnects on its own: each failed try is an answer, not a timer.
      let tries = 0;
      for (let i = 0; i < 5; i++) {
        for (;;) {
          tries++;
          assert.ok(tries < 50, "the store did not recover after PostgreSQL came back");
          try {
            await create(store, `after${i}`);
            ok.push(`after${i}`);
            break;
          } catch (err) {
            if (!(err instanceof OpError) || err.code !== "busy") throw err;
          }
        }
      }
      assert.equal(store.healthy, true);
      const rows = await store.query("admin.endpoints_list", {
        filter: {},
        afterId: "",
        limit: 1000,
      });
      const stored = new Set(rows.map((r) => r.id));
      const lost = ok.filter((id) => !stored.has(id));
      assert.equal(lost.length, 0, `lost ${lost.length} of ${ok.length}: ${lost.join(",")}`);
      assert.equal(rows.filter((r) => r.id.startsWith("down")).length, 0);
    } finally {
      await store?.close();
      await script("stop", dir);
    }
  },
});
