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
 * timeouts). The admin password is pre-set so `serve` does not refuse to start.
 */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const dir = opts.dataDir ?? join(await Deno.makeTempDir({ prefix: "nixmsg-it-" }), "data");
  const config = validateConfig({
    listen: "127.0.0.1:0",
    data_dir: dir,
    ...overrides,
    timeouts: {
      first_byte_seconds: 2,
      hello_seconds: 5,
      shutdown_drain_seconds: 2,
      ...(overrides.timeouts as Record<string, unknown> | undefined),
    },
  });
  await ensureDataDir(dir);
  await migrate(dbPath(dir), { backupDir: join(dir, "backup") });
  const db = openDb(dbPath(dir));
  setSetting(db, { key: "admin_password_hash", value: "$argon2id$test-only" }, Date.now());
  db.close();
  const pool = opts.pool ?? new PasswordPool({ params: TEST_POOL_PARAMS });
  const log = opts.log ?? (opts.verbose ? new Logger("debug") : silentLogger);
  const server = await startServer(config, log, {
    pool,
    clock: opts.clock,
    historyIntervalMs: opts.historyIntervalMs,
  });
  const port = server.listeners.listen.port;
  return {
    server,
    config,
    dataDir: dir,
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
    close: () => server.close(),
  };
}
