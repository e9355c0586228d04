import { join } from "node:path";
import { validateConfig } from "../../server/config/config.ts";
import type { Config } from "../../server/config/types.ts";
import { Logger, silentLogger } from "../../server/log/log.ts";
import { type RunningServer, startServer } from "../../server/app/server.ts";
import { dbPath, ensureDataDir } from "../../server/app/paths.ts";
import { migrate } from "../../server/store/migrations.ts";
import { openDb } from "../../server/store/db.ts";
import { setSetting } from "../../server/store/ops/settings.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";
import type { DatabaseSync } from "node:sqlite";
import type { SqliteStore } from "../../server/store/sqlite_store.ts";
import { type PgTestStore, pgTestStore } from "./pg_test_store.ts";
import { postgresTestDb, sqliteTestDb, TEST_STORE, type TestDb } from "./test_store.ts";

/** A cheap argon2id for tests (the spec parameters are exercised in server/auth tests). */
export const TEST_POOL_PARAMS = { memoryCost: 1024, timeCost: 1 };

/** An in-process server on 127.0.0.1:0 with a temp data dir. */
export interface TestServer {
  server: RunningServer;
  config: Config;
  dataDir: string;
  port: number;
  /** ws://127.0.0.1:port/mqtt */
  wsUrl: string;
  /** mqtt://127.0.0.1:port */
  tcpUrl: string;
  /** http://127.0.0.1:port */
  httpUrl: string;
  /** The store this server runs on (NIXMSG_TEST_STORE, or `store.kind` in the overrides). */
  storeKind: "sqlite" | "postgres";
  /** Read-only SQL on this server's database, on either store (assertions on stored rows). */
  db: TestDb;
  /** The SQLite store's read connection, for assertions on stored rows (SQLite only). */
  readonly reader: DatabaseSync;
  /** Creates an endpoint directly through the writer (admin provisioning comes later). */
  createEndpoint(id: string, password: string, fields?: { enabled?: boolean }): Promise<void>;
  /** Writes a `settings` row through the writer. */
  setSetting(key: string, value: string): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@linkcode startTestServer}. */
export interface TestServerOptions {
  clock?: () => number;
  dataDir?: string;
  verbose?: boolean;
  log?: Logger;
  /** The server's argon2 pool; default a pool with {@linkcode TEST_POOL_PARAMS}. */
  pool?: PasswordPool;
  /** The console's metrics history sampling period (default 10 s). */
  historyIntervalMs?: number;
}

/**
 * Starts the real server in this process with `overrides` merged over test defaults (short
 * timeouts). The admin password is pre-set so `serve` does not refuse to start. The store is
 * {@linkcode TEST_STORE} unless `overrides.store` names one; on PostgreSQL each test server gets
 * a fresh database, dropped by `close()`.
 */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const dir = opts.dataDir ?? join(await Deno.makeTempDir({ prefix: "nixmsg-it-" }), "data");
  // A database of our own on the test PostgreSQL unless the test brought its store.
  const pg: PgTestStore | null = overrides.store === undefined && TEST_STORE === "postgres"
    ? await pgTestStore()
    : null;
  const config = validateConfig({
    listen: "127.0.0.1:0",
    data_dir: dir,
    ...pg?.overrides,
    ...overrides,
    timeouts: {
      first_byte_seconds: 2,
      hello_seconds: 5,
      shutdown_drain_seconds: 2,
      ...(overrides.timeouts as Record<string, unknown> | undefined),
    },
  });
  await ensureDataDir(dir);
  if (config.store.kind === "sqlite") {
    await migrate(dbPath(dir), { backupDir: join(dir, "backup") });
    const db = openDb(dbPath(dir));
    setSetting(db, { key: "admin_password_hash", value: "$argon2id$test-only" }, Date.now());
    db.close();
  }
  const pool = opts.pool ?? new PasswordPool({ params: TEST_POOL_PARAMS });
  const log = opts.log ?? (opts.verbose ? new Logger("debug") : silentLogger);
  let server: RunningServer;
  try {
    server = await startServer(config, log, {
      pool,
      clock: opts.clock,
      historyIntervalMs: opts.historyIntervalMs,
    });
  } catch (err) {
    await pg?.drop();
    throw err;
  }
  const port = server.listeners.listen.port;
  const db = config.store.kind === "postgres"
    ? postgresTestDb(config.store.postgres_url)
    : sqliteTestDb(() => (server.store as SqliteStore).reader);
  return {
    server,
    config,
    dataDir: dir,
    storeKind: config.store.kind,
    db,
    port,
    wsUrl: `ws://127.0.0.1:${port}/mqtt`,
    tcpUrl: `mqtt://127.0.0.1:${port}`,
    httpUrl: `http://127.0.0.1:${port}`,
    get reader() {
      return (server.store as SqliteStore).reader;
    },
    async createEndpoint(id, password, fields = {}) {
      await server.store.run("endpoint.create", {
        id,
        name: id,
        remark: "",
        source: "admin",
        loginHash: await pool.hash(password),
        talkHash: null,
        defaultDelayMs: 0,
      });
      // Through the store, so the helper works with either store.kind (a fresh endpoint has
      // nothing to revoke).
      if (fields.enabled === false) await server.store.run("endpoint.disable", { endpointId: id });
    },
    async setSetting(key, value) {
      await server.store.run("settings.set", { key, value });
    },
    async close() {
      try {
        await db.close();
        await server.close();
      } finally {
        await pg?.drop();
      }
    },
  };
}
