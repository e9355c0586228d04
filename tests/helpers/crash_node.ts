// The crash matrix's harness (issue 14 item 4): one data directory served by a `nixmsg serve`
// child that a test kills with SIGKILL, or that kills itself at a named crash point
// (`NIXMSG_TEST_CRASH_AT`, server/config/crash_point.ts), and restarts on the same directory.
// Receivers behave like the SDK: they dedup by (from, id), ack what they got, and count what the
// application would have seen twice.
import assert from "node:assert/strict";
import { join } from "node:path";
import { online, type TestClient } from "./client.ts";
import { type ServerProcess, startServerProcess, type TestHome } from "./server_process.ts";
import { type Data, PW } from "./messaging.ts";
import { prepareHome } from "../bench/_load_util.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";
import { TEST_POOL_PARAMS } from "./test_server.ts";
import { openDb } from "../../server/store/db.ts";
import { dbPath } from "../../server/app/paths.ts";
import { type Observed, QUIET_MS, scaledMs, settle, STALL_MS } from "./fault_counts.ts";
import { makeTestHome } from "./server_process.ts";
import { type PgTestStore, pgTestStore } from "./pg_test_store.ts";
import { TEST_STORE } from "./test_store.ts";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { openSqliteStore } from "../../server/store/sqlite_store.ts";
import type { Store } from "../../server/store/store.ts";

/** The serve entry with cheap argon2 parameters (many logins, a 1,000-row import). */
export const SERVE_ENTRY = new URL("./serve_test_pool.ts", import.meta.url).pathname;
/** The admin password {@linkcode setAdminPassword} stores. */
export const ADMIN_PW = "admin-password-crash-1";

/** Stores the hash of {@linkcode ADMIN_PW} as the admin password of the database at `path`. */
export async function setAdminPassword(path: string): Promise<void> {
  const hash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(ADMIN_PW);
  const db = openDb(path);
  try {
    db.prepare(
      `INSERT INTO settings (key, value, updated_at) VALUES ('admin_password_hash', ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ).run(hash, Date.now());
  } finally {
    db.close();
  }
}

/**
 * An application receiver over reconnects: it keeps the (from, id) of every message it handed to
 * the application and acks each `msg` it gets. A `msg` after its ack was answered ok is a
 * duplicate the server must never cause; one before is a redelivery that dedup hides.
 */
export class AppReceiver {
  readonly id: string;
  readonly seen = new Map<string, string>();
  readonly acked = new Set<string>();
  /** `msg` frames received in all. */
  frames = 0;
  /** `msg` frames of an already seen message, before its ack was answered (dedup hides them). */
  redelivered = 0;
  /** `msg` frames of a message whose ack had been answered ok (must stay 0). */
  duplicates = 0;
  token: string | null = null;
  client: TestClient | null = null;
  #watchers = new Set<() => void>();

  constructor(id: string) {
    this.id = id;
  }

  /** Connects (with the session token when one was issued) and acks every `msg` frame. */
  async connect(url: string, password = PW): Promise<void> {
    const s = await online(url, this.id, this.token ?? password);
    this.token = s.token ?? this.token;
    this.client = s.client;
    const c = s.client;
    // Frames that arrived before the listener (right after the hello) are handled first.
    for (const f of c.frames) this.#onFrame(c, f);
    c.mqtt.on("message", (_topic, payload) => {
      this.#onFrame(c, JSON.parse(new TextDecoder().decode(payload)) as Data);
    });
    // Like the SDK: an ack the server died before answering is sent again (repeats succeed).
    for (const key of this.seen.keys()) {
      if (!this.acked.has(key)) this.#ack(c, key);
    }
  }

  #ack(c: TestClient, key: string): void {
    const [from, id] = key.split("\u0000");
    c.request({ type: "ack", from, id }).then((r) => {
      if (r.ok !== true) return;
      this.acked.add(key);
      for (const w of [...this.#watchers]) w();
    }, () => {}); // the server died before answering: the message or the ack comes again
  }

  #onFrame(c: TestClient, f: Data): void {
    if (f.type !== "msg") return;
    this.frames++;
    for (const w of [...this.#watchers]) w();
    const key = `${f.from}\u0000${f.id}`;
    if (this.acked.has(key)) this.duplicates++;
    else if (this.seen.has(key)) this.redelivered++;
    else this.seen.set(key, String((f.body as Data).data));
    this.#ack(c, key);
  }

  /** Whether the application got message `id` of `from`. */
  has(from: string, id: string): boolean {
    return this.seen.has(`${from}\u0000${id}`);
  }

  /** Calls `fn` on every `msg` frame and every ack answered ok; returns its removal. */
  watch(fn: () => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  /** What the application got of `from`, for {@linkcode countFaults}. */
  of(from: string): Observed {
    return {
      has: (id) => this.has(from, id),
      duplicates: this.duplicates,
      redelivered: this.redelivered,
    };
  }

  /**
   * Waits (bounded) until every id of `from` in `ids` is acked, then for a quiet window with no
   * `msg` frame, so that a late duplicate is counted. Never rejects: count what was observed.
   * Ends early after {@linkcode STALL_MS} without a frame or an ack answer (the servers of these
   * tests push again only after a reconnect or the 300 s ack timeout).
   */
  settleAcked(from: string, ids: readonly string[], timeoutMs = scaledMs(30_000)) {
    return settle({
      done: () => ids.every((id) => this.acked.has(`${from}\u0000${id}`)),
      subscribe: (f) => this.watch(f),
      timeoutMs,
      quietMs: QUIET_MS,
      stallMs: STALL_MS,
    });
  }

  async close(): Promise<void> {
    await this.client?.close();
    this.client = null;
  }
}

/** A data directory and the server process on it. */
export class CrashNode {
  readonly home: TestHome;
  server: ServerProcess | null = null;
  /** Server exits nobody asked for (not a kill, not an armed crash point). */
  crashes = 0;
  #planned = new WeakSet<ServerProcess>();
  /** The node's own PostgreSQL database when it runs on PostgreSQL (NIXMSG_TEST_STORE). */
  readonly pg: PgTestStore | null;
  #open: TestClient[] = [];

  private constructor(home: TestHome, pg: PgTestStore | null = null) {
    this.home = home;
    this.pg = pg;
  }

  /**
   * A home whose database holds `ids` (password {@linkcode PW}) and the admin password, with the
   * config `overrides` (`limits.requests_per_second` defaults to 100,000). With
   * `NIXMSG_TEST_STORE=postgres` the database is a fresh one on the test PostgreSQL, filled
   * through the store's ops, and the server is started on it with `store.kind: postgres`.
   */
  static async create(
    ids: readonly string[],
    overrides: Record<string, unknown> = {},
  ): Promise<CrashNode> {
    // The tests check every message's status one request after another; the per-connection
    // request limit (spec 5) is not what they are about.
    const limits = {
      requests_per_second: 100_000,
      ...(overrides.limits as Record<string, unknown> | undefined),
    };
    if (TEST_STORE === "postgres") return await CrashNode.#createOnPostgres(ids, overrides, limits);
    const home = await prepareHome({ ...overrides, limits }, ids, PW);
    await setAdminPassword(dbPath(home.dataDir));
    return new CrashNode(home);
  }

  static async #createOnPostgres(
    ids: readonly string[],
    overrides: Record<string, unknown>,
    limits: Record<string, unknown>,
  ): Promise<CrashNode> {
    const pg = await pgTestStore();
    const home = await makeTestHome({ ...overrides, limits, ...pg.overrides });
    const node = new CrashNode(home, pg);
    try {
      const pool = new PasswordPool({ params: TEST_POOL_PARAMS });
      const loginHash = await pool.hash(PW);
      const adminHash = await pool.hash(ADMIN_PW);
      await node.withStore(async (store) => {
        await Promise.all(ids.map((id) =>
          store.run("endpoint.create", {
            id,
            name: id,
            remark: "",
            source: "admin",
            loginHash,
            talkHash: null,
            defaultDelayMs: 0,
          })
        ));
        await store.run("settings.set", { key: "admin_password_hash", value: adminHash });
      });
    } catch (err) {
      await node.close();
      throw err;
    }
    return node;
  }

  /** Runs `fn` on the node's store, opened in this process while no server runs. */
  async withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.server !== null) throw new Error("the server is running");
    const store: Store = this.pg !== null
      ? await openPostgresStore({ url: this.pg.url, maxBatch: 256, maxWaitMs: 2, poolSize: 1 })
      : await openSqliteStore({
        path: dbPath(this.home.dataDir),
        backupDir: this.backupDir,
        synchronous: "FULL",
        maxBatch: 256,
        maxWaitMs: 2,
      });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  }

  /** A node on an existing home (e.g. one holding a version-1 database). */
  static on(home: TestHome): CrashNode {
    return new CrashNode(home);
  }

  get ws(): string {
    return `ws://127.0.0.1:${this.running.port}/mqtt`;
  }

  get http(): string {
    return `http://127.0.0.1:${this.running.port}`;
  }

  get running(): ServerProcess {
    if (this.server === null) throw new Error("no server is running");
    return this.server;
  }

  get backupDir(): string {
    return join(this.home.dataDir, "backup");
  }

  /** Starts the server; `crashAt` arms a crash point for this run only. */
  async start(crashAt?: string): Promise<ServerProcess> {
    const env: Record<string, string> = crashAt ? { NIXMSG_TEST_CRASH_AT: crashAt } : {};
    const s = await startServerProcess(this.home, 60_000, { entry: SERVE_ENTRY, env });
    if (crashAt) this.#planned.add(s);
    s.exited.then(() => {
      if (!this.#planned.has(s)) this.crashes++;
    });
    this.server = s;
    return s;
  }

  /** Waits (bounded) until the armed crash point killed the server; asserts it was SIGKILL. */
  async crashed(timeoutMs = 20_000): Promise<void> {
    const s = this.running;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const status = await Promise.race([
      s.exited,
      new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs))),
    ]);
    clearTimeout(timer);
    assert.ok(status !== null, "the crash point was not reached");
    assert.equal(status.signal, "SIGKILL");
    await s.kill(); // collects the output
    this.server = null;
  }

  /** SIGKILL now. */
  async kill(): Promise<void> {
    this.#planned.add(this.running);
    await this.running.kill();
    this.server = null;
  }

  /** Connects and handshakes `id` (closed by {@linkcode CrashNode.close}). */
  async online(id: string, password = PW): Promise<TestClient> {
    const { client } = await online(this.ws, id, password);
    this.#open.push(client);
    return client;
  }

  /**
   * Closes the clients, stops a running server (exit code 0) and removes the directory (and the
   * PostgreSQL database).
   */
  async close(): Promise<void> {
    for (const c of this.#open) await c.close();
    try {
      if (this.server) {
        this.#planned.add(this.server);
        assert.equal(await this.server.stop(), 0);
      }
    } finally {
      try {
        await this.home.cleanup();
      } finally {
        await this.pg?.drop();
      }
    }
  }
}

/** Runs `fn` on at most `limit` items at once. */
export async function eachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
