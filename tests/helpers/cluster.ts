// N `nixmsg serve` processes as one cluster (issue 30): one PostgreSQL test database, one real
// nats-server with a token, the shipped permissions. Used by tests/cluster_test.ts and
// tests/bench/cluster.ts.
import assert from "node:assert/strict";
import mqtt, { type MqttClient } from "mqtt";
import { tuneStream } from "../../sdk/ts/src/transport.ts";
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
  /** Starts node `i` again (after a kill or a stop), with the same node id and data dir. */
  restart(i: number): Promise<void>;
  /** Stops node `i` cleanly (SIGTERM), marks it down first, and checks it exited with 0. */
  stop(i: number): Promise<void>;
  /** The indexes of the nodes that are up (not stopped, killed or stopping), ascending. */
  live(): number[];
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
          limits: {
            requests_per_second: 1000,
            ...(extra.limits as Record<string, unknown> | undefined),
          },
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
    async stop(i) {
      const s = nodes[i];
      if (!s) return;
      nodes[i] = null;
      // Bounded: the shutdown drain is 10 s; a node still running after a minute is killed.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const code = await Promise.race([
        s.stop(),
        new Promise<null>((r) => (timer = setTimeout(() => r(null), 60_000))),
      ]);
      clearTimeout(timer);
      if (code === null) await s.kill();
      assert.equal(code, 0, `node ${i + 1} stopped with ${code}: ${s.stderr()}`);
    },
    live: () => nodes.flatMap((s, i) => (s === null ? [] : [i])),
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

/** A downlink frame as JSON. */
export type PeerFrame = Record<string, unknown> & { type: string };

/** One MQTT connection of a {@linkcode ClusterPeer}: its requests waiting for their `resp`. */
interface PeerConn {
  readonly client: MqttClient;
  readonly node: number;
  /** Settles when the connection has closed. */
  readonly closed: Promise<void>;
  readonly waiting: Map<string, { resolve: (f: PeerFrame) => void; reject: (e: Error) => void }>;
}

/**
 * One endpoint's connection to a cluster, the way a device with a list of nodes behaves: it holds
 * exactly one MQTT connection at a time, and when that one closes (its node stopped) it connects to
 * the next live node and completes `hello` there, retrying (bounded) until one accepts it. A new
 * connection is only opened once the old one has closed, so two connections of one endpoint never
 * take each other over (0x8E). Keeps no frame history (it runs for minutes at hundreds of msg/s):
 * frames other than `resp` go to `onFrame`.
 */
export class ClusterPeer {
  readonly id: string;
  /** Frames other than `resp` (msg, receipt, …), with the node they came from. */
  onFrame: (f: PeerFrame, node: number) => void = () => {};
  /** Connections opened (the first one included) and the nodes they went to. */
  readonly joins: number[] = [];
  #cl: Cluster;
  #conn: PeerConn | null = null;
  #rid = 0;
  #closing = false;
  #readyWaiters = new Set<() => void>();
  #loop: Promise<void> = Promise.resolve();
  /** Why the reconnect loop gave up, or null. */
  failure: string | null = null;

  constructor(cl: Cluster, id: string) {
    this.#cl = cl;
    this.id = id;
  }

  /** The node of the open connection, or -1. */
  get node(): number {
    return this.#conn?.node ?? -1;
  }

  /** Connects to node `first` (or the next live one) and resolves once `hello` was answered. */
  async start(first: number): Promise<void> {
    this.#loop = this.#connectLoop(first, 60_000);
    await this.#loop;
    if (this.#conn === null) throw new Error(`${this.id}: ${this.failure ?? "not connected"}`);
  }

  /** One connection attempt at node `node`: CONNECT, SUBSCRIBE, hello. Null when it failed. */
  async #open(node: number): Promise<PeerConn | null> {
    const url = this.#cl.url(node);
    const client = mqtt.connect(url, {
      clientId: this.id,
      username: this.id,
      password: PW,
      protocolVersion: 5,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      keepalive: 60,
      properties: { sessionExpiryInterval: 0 },
    });
    tuneStream(client.stream, url);
    const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
    const conn: PeerConn = { client, node, closed, waiting: new Map() };
    client.on("error", () => {});
    client.on("message", (_topic, payload) => {
      const f = JSON.parse(new TextDecoder().decode(payload)) as PeerFrame;
      if (f.type === "resp") {
        const w = conn.waiting.get(String(f.rid));
        if (w) {
          conn.waiting.delete(String(f.rid));
          w.resolve(f);
        }
        return;
      }
      this.onFrame(f, node);
    });
    client.on("close", () => {
      for (const w of conn.waiting.values()) w.reject(new Error(`${this.id}: connection closed`));
      conn.waiting.clear();
    });
    const up = await Promise.race([
      new Promise<boolean>((resolve) => client.once("connect", () => resolve(true))),
      closed.then(() => false),
    ]);
    try {
      if (!up) throw new Error("no CONNACK");
      await client.subscribeAsync(`nix/c/${this.id}/down`, { qos: 1 });
      const hello = await this.#send(conn, { type: "hello", client: "cluster-peer/0" }, 15_000);
      if (hello.ok !== true) throw new Error(`hello: ${JSON.stringify(hello)}`);
    } catch {
      client.end(true);
      await closed;
      return null;
    }
    return conn;
  }

  /** Tries the live nodes from `from` on, round robin, until one serves it or `boundMs` passed. */
  async #connectLoop(from: number, boundMs: number): Promise<void> {
    const end = Date.now() + boundMs;
    for (let attempt = 0; !this.#closing && Date.now() < end; attempt++) {
      const live = this.#cl.live();
      if (live.length > 0) {
        const n = this.#cl.nodes.length;
        const node = live.find((i) => i >= from % n) ?? live[0]!;
        const conn = await this.#open(node);
        if (conn !== null) {
          if (this.#closing) {
            conn.client.end(true);
            return;
          }
          this.#conn = conn;
          this.joins.push(node);
          // When it closes (now or later) the next live node is tried.
          void conn.closed.then(() => {
            if (this.#conn !== conn) return;
            this.#conn = null;
            if (!this.#closing) this.#loop = this.#connectLoop(node + 1, 60_000);
          });
          for (const w of [...this.#readyWaiters]) w();
          return;
        }
        from = node + 1;
      }
      await new Promise((r) => setTimeout(r, Math.min(1000, 100 * (attempt + 1))));
    }
    if (!this.#closing) this.failure = `no node accepted ${this.id} within ${boundMs} ms`;
  }

  /** Resolves once a connection is open (true), or false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.#conn !== null) return Promise.resolve(true);
    if (this.#closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.#readyWaiters.delete(onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#readyWaiters.add(onReady);
    });
  }

  #send(conn: PeerConn, frame: Record<string, unknown>, timeoutMs: number): Promise<PeerFrame> {
    const rid = `r${++this.#rid}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        conn.waiting.delete(rid);
        reject(new Error(`${this.id}: no resp to ${String(frame.type)} within ${timeoutMs} ms`));
      }, timeoutMs);
      conn.waiting.set(rid, {
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      conn.client.publish(
        `nix/c/${this.id}/up`,
        JSON.stringify({ v: 1, rid, ...frame }),
        { qos: 1 },
        (err) => {
          if (!err || !conn.waiting.delete(rid)) return;
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  /**
   * Sends a request on the open connection (waiting, bounded, for one) and resolves with its
   * `resp`. Rejects when there is no connection within `timeoutMs`, when the connection closes
   * first, or when no `resp` came within `timeoutMs`.
   */
  async request(frame: Record<string, unknown>, timeoutMs: number): Promise<PeerFrame> {
    if (this.#conn === null && !(await this.ready(timeoutMs))) {
      throw new Error(`${this.id}: not connected within ${timeoutMs} ms`);
    }
    return await this.#send(this.#conn!, frame, timeoutMs);
  }

  /** Closes the connection for good (no reconnect). */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#loop;
    const c = this.#conn;
    this.#conn = null;
    if (c !== null) await new Promise<void>((resolve) => c.client.end(true, {}, () => resolve()));
  }
}
