// issue 30 item 4: the lockouts of spec 5 "锁定" hold across the nodes of a cluster. Two real
// `nixmsg serve` processes on one PostgreSQL and one nats-server: wrong passwords for one
// endpoint spread over both nodes lock it after the same 10 failures as on one node, both nodes
// refuse the right password then, and an admin unlock on one node frees it on the other.
import assert from "node:assert/strict";
import { online, TestClient } from "./helpers/client.ts";
import { PW } from "./helpers/messaging.ts";
import { NATS_SKIP_REASON } from "./helpers/nats_server.ts";
import { type Cluster, startCluster } from "./helpers/cluster.ts";
import { AdminClient } from "./helpers/admin.ts";
import { PG_SKIP_REASON } from "../server/store/postgres/_testing.ts";
import { connectPostgres, query } from "../server/store/postgres/sql.ts";

const SKIP = PG_SKIP_REASON ?? NATS_SKIP_REASON;
if (SKIP) console.error(SKIP);

/** MQTT 5 CONNACK: bad user name or password (wrong, or locked: spec 5 does not tell them apart). */
const BAD_CREDENTIALS = 0x86;
/** spec 5: 10 wrong passwords per endpoint and source address lock them for 5 minutes. */
const PAIR_LIMIT = 10;

async function withCluster(fn: (c: Cluster) => Promise<void>): Promise<void> {
  const c = await startCluster(2, ["a", "b"]);
  try {
    await fn(c);
  } finally {
    await c.close();
  }
}

/** One MQTT password login on node `i`; its CONNACK reason code. */
async function login(c: Cluster, i: number, password: string): Promise<number | null | undefined> {
  const client = await TestClient.connect(c.url(i), "a", password);
  const code = client.connack?.reasonCode;
  await client.close();
  return code;
}

Deno.test({
  name: "wrong login passwords spread over two nodes lock the endpoint on both after 10",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(async (c) => {
      // Nine wrong passwords, alternating nodes: neither node alone saw enough to lock.
      for (let i = 0; i < PAIR_LIMIT - 1; i++) {
        assert.equal(await login(c, i % 2, `wrong-${i}`), BAD_CREDENTIALS);
      }
      // Not locked yet: the right password still works (and does not reset the count).
      const ok = (await online(c.url(1), "a", PW)).client;
      await ok.close();
      assert.equal(await login(c, 0, "wrong-last"), BAD_CREDENTIALS);
      // The tenth failure locked the pair: both nodes refuse the right password now.
      assert.equal(await login(c, 0, PW), BAD_CREDENTIALS, "locked on node 1");
      assert.equal(await login(c, 1, PW), BAD_CREDENTIALS, "locked on node 2");

      // An admin unlock on node 1 frees the endpoint on node 2 too.
      const admin = new AdminClient(`http://${c.nodes[0]!.addr}`);
      await admin.login();
      const view = await admin.call("GET", "/api/admin/endpoints/a");
      assert.equal(view.status, 200, view.text);
      assert.equal(view.data?.login_paused_until, null, "the per-endpoint rule (50) did not lock");
      const r = await admin.call("POST", "/api/admin/endpoints/a/unlock");
      assert.equal(r.status, 200, r.text);
      const back = (await online(c.url(1), "a", PW)).client;
      await back.close();
    }),
});

Deno.test({
  name: "wrong talk passwords from one sender spread over two nodes lock the pair on both after 10",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(async (c) => {
      const admin = new AdminClient(`http://${c.nodes[1]!.addr}`);
      await admin.login();
      const set = await admin.call("PUT", "/api/admin/endpoints/a/talk-password", {
        body: { talk_password: "talk-secret" },
      });
      assert.equal(set.status, 200, set.text);
      const codes: string[] = [];
      const unlockOn = async (node: number, passwords: string[]) => {
        const b = (await online(c.url(node), "b", PW)).client;
        try {
          for (const p of passwords) {
            const f = await b.request({ type: "unlock", endpoint_id: "a", talk_password: p });
            codes.push(String((f.error as Record<string, unknown> | undefined)?.code ?? "ok"));
          }
        } finally {
          await b.close();
        }
      };
      const wrong = (from: number) =>
        Array.from({ length: PAIR_LIMIT / 2 }, (_, i) => `wrong-${from + i}`);
      await unlockOn(0, wrong(0));
      await unlockOn(1, wrong(5));
      assert.deepEqual(codes, Array(PAIR_LIMIT).fill("talk_password_invalid"));
      codes.length = 0;
      await unlockOn(0, ["talk-secret"]);
      await unlockOn(1, ["talk-secret"]);
      assert.deepEqual(codes, ["rate_limited", "rate_limited"]);
    }),
});

Deno.test({
  name: "registration: wrong codes and successes spread over two nodes hit the limits of one node",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(async (c) => {
      const admin = new AdminClient(`http://${c.nodes[0]!.addr}`);
      await admin.login();
      const gen = await admin.call("PUT", "/api/admin/registration", {
        body: { generate: true, enabled: true },
      });
      assert.equal(gen.status, 200, gen.text);
      const code = gen.data?.code as string;
      const register = async (node: number, body: Record<string, string>) => {
        const r = await fetch(`http://${c.nodes[node]!.addr}/api/client/register`, {
          method: "POST",
          body: JSON.stringify(body),
        });
        const json = await r.json() as { error?: { code?: string } };
        return r.status === 200 ? "ok" : String(json.error?.code);
      };
      // limits.registrations_per_ip_per_minute is 10 by default: 5 on each node, then no more.
      const made: string[] = [];
      for (let i = 0; i < 10; i++) {
        made.push(await register(i % 2, { registration_code: code, id: `self-${i}` }));
      }
      assert.deepEqual(made, Array(10).fill("ok"));
      assert.equal(await register(0, { registration_code: code, id: "self-x" }), "rate_limited");
      assert.equal(await register(1, { registration_code: code, id: "self-y" }), "rate_limited");

      // Wrong codes (spec 5: 10 per address in 5 minutes), alternating nodes, lock both.
      const wrong: string[] = [];
      for (let i = 0; i < PAIR_LIMIT; i++) {
        wrong.push(await register(i % 2, { registration_code: `wrong-code-${i}`, id: `w-${i}` }));
      }
      assert.deepEqual(wrong, Array(PAIR_LIMIT).fill("registration_code_invalid"));
      const db = connectPostgres({ url: c.pg.url, max: 1 });
      try {
        const locked = await query<{ n: number }>(
          db,
          `SELECT count(*)::int AS n FROM failure_counters
            WHERE left(key, 20) = '["registration","ip"' AND locked_until > 0`,
        );
        assert.equal(locked[0].n, 1, "one locked address in the store");
      } finally {
        await db.end();
      }
      assert.equal(await register(0, { registration_code: code, id: "r0" }), "rate_limited");
      assert.equal(await register(1, { registration_code: code, id: "r1" }), "rate_limited");
    }),
});
