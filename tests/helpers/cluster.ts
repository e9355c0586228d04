// N `nixmsg serve` processes as one cluster (issue 30): one PostgreSQL test database, one real
// nats-server with a token, the shipped permissions. Used by tests/cluster_test.ts and
// tests/bench/cluster.ts.
import assert from "node:assert/strict";
import { PW } from "./messaging.ts";
import { type PgTestStore, pgTestStore } from "./pg_test_store.ts";
import {
  makeTestHome,
  type ServerProcess,
  startServerProcess,
  type TestHome,
} from "./server_process.ts";
import { type NatsServer, startNatsServer } from "./nats_server.ts";
import { TEST_POOL_PARAMS } from "./test_server.ts";
import { ADMIN_PASSWORD } from "./admin.ts";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";

/** N nodes on one database and one NATS. */
export interface Cluster {
  readonly pg: PgTestStore;
  readonly nats: NatsServer;
  readonly nodes: (ServerProcess | null)[];
  readonly homes: TestHome[];
  /** The WebSocket MQTT URL of node `i` (0-based). */
  url(i: number): string;
  /** Starts node `i` again (after a kill). */
  restart(i: number): Promise<void>;
  close(): Promise<void>;
}

async function createEndpoints(url: string, ids: readonly string[]): Promise<void> {
  const pool = new PasswordPool({ params: TEST_POOL_PARAMS });
  const hash = await pool.hash(PW);
  const store = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2, poolSize: 1 });
  try {
    // The admin console logs in with ADMIN_PASSWORD on any node.
    await store.run("settings.set", {
      key: "admin_password_hash",
      value: await pool.hash(ADMIN_PASSWORD),
    });
    for (const id of ids) {
      await store.run("endpoint.create", {
        id,
        name: id,
        remark: "",
        source: "admin",
        loginHash: hash,
        talkHash: null,
        defaultDelayMs: 0,
      });
    }
  } finally {
    await store.close();
  }
}

export async function startCluster(
  n: number,
  ids: readonly string[],
  extra: Record<string, unknown> = {},
): Promise<Cluster> {
  const pg = await pgTestStore();
  await createEndpoints(pg.url, ids);
  const nats = await startNatsServer({ token: "cluster-test-token" });
  const homes: TestHome[] = [];
  const nodes: (ServerProcess | null)[] = [];
  const start = async (i: number) => {
    nodes[i] = await startServerProcess(homes[i]);
  };
  try {
    for (let i = 0; i < n; i++) {
      homes.push(
        await makeTestHome({
          ...pg.overrides,
          ...extra,
          // The kill test sends as fast as the round trip allows.
          limits: { requests_per_second: 1000 },
          cluster: {
            node_id: `node-${i + 1}`,
            nats_url: nats.url,
            nats_token: "cluster-test-token",
          },
        }),
      );
      nodes.push(null);
    }
    // One after another: each start migrates (a no-op here) and takes its lease.
    for (let i = 0; i < n; i++) await start(i);
  } catch (err) {
    for (const s of nodes) await s?.kill();
    await nats.stop();
    await pg.drop();
    throw err;
  }
  return {
    pg,
    nats,
    nodes,
    homes,
    url: (i) => `ws://${nodes[i]!.addr}/mqtt`,
    restart: start,
    async close() {
      for (const s of nodes) {
        if (s !== null) assert.equal(await s.stop(), 0, s.stderr());
      }
      for (const h of homes) await h.cleanup();
      await nats.stop();
      await pg.drop();
    },
  };
}
