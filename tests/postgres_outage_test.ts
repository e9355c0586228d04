import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Frame, TestClient } from "./helpers/client.ts";
import { type Data, KEEP, msgIds, PW, sendNowFrame } from "./helpers/messaging.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";
import { openPostgresStore } from "../server/store/postgres/mod.ts";
import { pgIgnored } from "../server/store/postgres/_testing.ts";
import { online } from "./helpers/client.ts";

// A PostgreSQL restart while the server runs (issue 29 item 5), seen over MQTT: sends answer
// `busy` while the database is down, /readyz says 503, nothing answered ok is lost, and the same
// server process recovers on its own when the database is back. This test starts a PostgreSQL of
// its own (scripts/test_postgres.sh), as it stops it; it runs whatever NIXMSG_TEST_STORE says.

const SCRIPT = fileURLToPath(new URL("../scripts/test_postgres.sh", import.meta.url));

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

async function readyStatus(t: TestServer): Promise<number> {
  const r = await fetch(`${t.httpUrl}/readyz`);
  await r.body?.cancel();
  return r.status;
}

Deno.test({
  name:
    "a PostgreSQL restart under a running server: sends answer busy, nothing answered ok is lost, it recovers by itself",
  ignore: pgIgnored(),
  fn: async () => {
    const env = await script("start");
    const url = exported(env, "NIXMSG_TEST_POSTGRES_URL");
    const dir = exported(env, "NIXMSG_TEST_POSTGRES_DIR");
    let t: TestServer | undefined;
    const clients: TestClient[] = [];
    try {
      const seed = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2, poolSize: 1 });
      try {
        await seed.run("settings.set", { key: "admin_password_hash", value: "$argon2id$test" });
      } finally {
        await seed.close();
      }
      t = await startTestServer({ store: { kind: "postgres", postgres_url: url } });
      for (const id of ["a", "b"]) await t.createEndpoint(id, PW);
      const a = (await online(t.wsUrl, "a", PW)).client;
      const b = (await online(t.wsUrl, "b", PW)).client;
      clients.push(a, b);
      const answeredOk: string[] = [];
      // A longer bound than TestClient.request's 8 s: on the loaded test machine a send during
      // the outage or right after it was seen to take longer to be answered (busy or ok).
      const send = async (id: string) => {
        const rid = a.nextRid();
        await a.publishRaw(
          JSON.stringify({ v: 1, rid, ...sendNowFrame(id, "b", `body of ${id}`, KEEP) }),
        );
        let r: Frame | undefined;
        await a.until(
          () => (r = a.frames.find((f) => f.type === "resp" && f.rid === rid)) !== undefined,
          `resp of ${id}`,
          30_000,
        );
        if (r!.ok === true) answeredOk.push(id);
        return r!;
      };
      for (let i = 0; i < 10; i++) assert.equal((await send(`before${i}`)).ok, true);
      await b.until(() => msgIds(b).length === 10, "the messages sent before the outage");

      await script("pause", dir);
      // Every send while the database is down is refused with busy: none can commit.
      const down = ["down0", "down1", "down2", "down3", "down4"];
      for (const id of down) {
        const r = await send(id);
        assert.equal(r.ok, false, `${id} was answered ok with the database down`);
        assert.equal((r.error as Data).code, "busy", JSON.stringify(r));
      }
      assert.equal(await readyStatus(t), 503, "/readyz while the database is down");

      await script("resume", dir);
      // The same process recovers: the sender retries each refused send, as the SDK does; each
      // failed try is an answer, not a timer.
      let tries = 0;
      for (const id of down) {
        for (;;) {
          tries++;
          assert.ok(tries < 100, "the server did not recover after PostgreSQL came back");
          const r = await send(id);
          if (r.ok === true) break;
          assert.equal((r.error as Data).code, "busy", JSON.stringify(r));
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      for (let i = 0; i < 10; i++) assert.equal((await send(`after${i}`)).ok, true);
      await b.until(() => msgIds(b).length >= answeredOk.length, "every message answered ok");
      const got = new Set(msgIds(b));
      const lost = answeredOk.filter((id) => !got.has(id));
      assert.equal(lost.length, 0, `lost ${lost.length} of ${answeredOk.length}: ${lost}`);
      assert.equal(msgIds(b).length, got.size, "each message once");
      assert.equal(answeredOk.length, 25);
      // Readiness follows the commits: once writes commit again, /readyz says 200.
      for (let i = 0; (await readyStatus(t)) !== 200; i++) {
        assert.ok(i < 100, "/readyz stayed 503 after recovery");
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      for (const c of clients) await c.close();
      await t?.close();
      await script("stop", dir);
    }
  },
});
