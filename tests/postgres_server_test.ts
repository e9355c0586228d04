import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { KEEP, PW, sendFrame, waitMsg, waitReceipt } from "./helpers/messaging.ts";
import { pgTestStore } from "./helpers/pg_test_store.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { makeTestHome, runCli } from "./helpers/server_process.ts";
import { dbPath } from "../server/app/paths.ts";
import { openDb } from "../server/store/db.ts";
import { createEndpoint } from "../server/store/ops/endpoints.ts";
import { pgIgnored } from "../server/store/postgres/_testing.ts";

// The real server with `store.kind: postgres` (issue 29), talking MQTT to real clients, on a
// database of its own on the test PostgreSQL.

Deno.test({
  name: "on PostgreSQL a group message is delivered, acked and receipted, and /readyz is 200",
  ignore: pgIgnored(),
  fn: async () => {
    const pg = await pgTestStore();
    const t = await startTestServer(pg.overrides);
    const clients: TestClient[] = [];
    try {
      assert.equal(t.server.store.kind, "postgres");
      for (const id of ["a", "b", "c"]) await t.createEndpoint(id, PW);
      for (const id of ["a", "b", "c"]) clients.push((await online(t.wsUrl, id, PW)).client);
      const [a, b, c] = clients;
      const g = await a.request({
        type: "group.create",
        name: "g",
        members: [{ id: "b" }, { id: "c" }],
      });
      assert.equal(g.ok, true, JSON.stringify(g));
      const groupId = (g.data as Record<string, unknown>).group_id as string;
      const sent = await a.request(
        sendFrame("gm1", "", "hello group", { to: { kind: "group", id: groupId }, delay_ms: 0 }),
      );
      assert.equal(sent.ok, true, JSON.stringify(sent));
      for (const r of [b, c]) {
        await waitMsg(r, "gm1");
        const ack = await r.request({ type: "ack", from: "a", id: "gm1" });
        assert.deepEqual(ack.data, { result: "accepted" });
      }
      await waitReceipt(a, "gm1");
      await a.until(
        () => a.frames.filter((f) => f.type === "receipt" && f.id === "gm1").length === 2,
        "two receipts",
      );
      const status = await a.request({ type: "status", id: "gm1" });
      assert.equal((status.data as Record<string, unknown>).state, "completed");
      const ready = await fetch(`${t.httpUrl}/readyz`);
      await ready.body?.cancel();
      assert.equal(ready.status, 200);
    } finally {
      for (const c of clients) await c.close();
      await t.close();
      await pg.drop();
    }
  },
});

Deno.test({
  name: "on PostgreSQL a kept message sent to an offline endpoint arrives after a server restart",
  ignore: pgIgnored(),
  fn: async () => {
    const pg = await pgTestStore();
    let t = await startTestServer(pg.overrides);
    const clients: TestClient[] = [];
    try {
      for (const id of ["a", "b"]) await t.createEndpoint(id, PW);
      const a = (await online(t.wsUrl, "a", PW)).client;
      clients.push(a);
      const sent = await a.request(sendFrame("k1", "b", "kept", { delay_ms: 0, ...KEEP }));
      assert.equal(sent.ok, true, JSON.stringify(sent));
      await a.close();
      await t.close();
      // A new server process on the same database: startup recovery (spec 7.8) on PostgreSQL.
      t = await startTestServer(pg.overrides);
      const b = (await online(t.wsUrl, "b", PW)).client;
      clients.push(b);
      const msg = await waitMsg(b, "k1");
      assert.equal((msg.body as Record<string, unknown>).data, "kept");
      const ack = await b.request({ type: "ack", from: "a", id: "k1" });
      assert.deepEqual(ack.data, { result: "accepted" });
    } finally {
      for (const c of clients) await c.close();
      await t.close();
      await pg.drop();
    }
  },
});

Deno.test({
  name:
    "store copy --to postgres:// moves a stopped database with every count equal, never printing the password",
  ignore: pgIgnored(),
  fn: async () => {
    const pg = await pgTestStore({ empty: true });
    const home = await makeTestHome();
    try {
      assert.equal((await runCli(home, ["admin", "init"])).code, 0);
      const db = openDb(dbPath(home.dataDir));
      try {
        db.exec("BEGIN");
        for (let i = 0; i < 120; i++) {
          createEndpoint(db, {
            id: `e${i}`,
            name: `e${i}`,
            remark: "",
            source: "admin",
            loginHash: "x",
            talkHash: null,
            defaultDelayMs: 0,
          }, Date.now());
        }
        db.exec("COMMIT");
      } finally {
        db.close();
      }
      const res = await runCli(home, ["store", "copy", "--to", pg.url]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /endpoints: source 120, target 120\n/);
      assert.match(res.stdout, /settings: source 1, target 1\n/);
      assert.match(res.stdout, /every count is equal/);
      const password = new URL(pg.url).password;
      assert.ok(!(res.stdout + res.stderr).includes(password), "the password is never printed");
      const again = await runCli(home, ["store", "copy", "--to", pg.url]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /Copy refused: The target database is not empty/);
    } finally {
      await home.cleanup();
      await pg.drop();
    }
  },
});
