import { join } from "node:path";
import { redactUrl } from "../config/config.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/log.ts";
import { dbPath } from "../app/paths.ts";
import { openSqliteStore } from "./sqlite_store.ts";
import {
  type PostgresStoreOptions,
  type Store,
  StoreUnreachableError,
  StoreUnsupportedError,
} from "./store.ts";

/** What server/store/postgres/mod.ts exports. */
interface PostgresModule {
  openPostgresStore?: (opts: PostgresStoreOptions) => Promise<Store>;
}

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  log: Logger;
  clock?: () => number;
  /** Ends the wait for an unreachable database (SIGTERM during start-up). */
  signal?: AbortSignal;
  /** First wait before trying an unreachable database again (default 1 s); doubles each time. */
  retryFirstMs?: number;
  /** Longest wait between tries (default 30 s). */
  retryMaxMs?: number;
  /** Loads the PostgreSQL implementation; tests replace it. */
  loadPostgres?: () => Promise<PostgresModule>;
}

/** The store cannot be opened at all (not in this build, or start-up was cancelled). */
export class StoreOpenError extends Error {
  override name = "StoreOpenError";
}

/** Why `nixmsg backup` and online backups are refused with PostgreSQL. */
export const POSTGRES_BACKUP_HINT =
  "With store.kind postgres, back up the database with pg_dump (e.g. `pg_dump --format=custom " +
  "--file nixmsg.dump <database>`); see docs/operations.md";

// A dynamic import with a literal specifier: `deno compile` and `deno check` see it and include the
// PostgreSQL store and its driver, while a SQLite server never loads them (no start-up cost).
function defaultLoadPostgres(): Promise<PostgresModule> {
  return import("./postgres/mod.ts");
}

/**
 * Opens the store that `config.store.kind` names: SQLite in `data_dir` (migrated), or PostgreSQL
 * at `store.postgres_url`. While PostgreSQL cannot be reached it logs that clearly, with the URL
 * redacted, and tries again with backoff until it opens or `signal` aborts; other errors end it.
 *
 * @throws {StoreOpenError} when the PostgreSQL store is not in this build or `signal` aborted
 * @example
 * ```ts
 * const store = await openStore(config, { log });
 * ```
 */
export async function openStore(config: Config, opts: OpenStoreOptions): Promise<Store> {
  const { log, clock } = opts;
  const base = {
    maxBatch: config.writer.max_batch,
    maxWaitMs: config.writer.max_wait_ms,
    clock,
    log,
  };
  if (config.store.kind === "sqlite") {
    return await openSqliteStore({
      ...base,
      path: dbPath(config.data_dir),
      backupDir: join(config.data_dir, "backup"),
      synchronous: config.sqlite_synchronous,
    });
  }
  let mod: PostgresModule;
  try {
    mod = await (opts.loadPostgres ?? defaultLoadPostgres)();
  } catch (err) {
    log.error("postgres store not available", { error: (err as Error)?.message ?? String(err) });
    throw new StoreOpenError(
      "The PostgreSQL store is not available in this build (store.kind: postgres)",
    );
  }
  const open = mod.openPostgresStore;
  if (typeof open !== "function") {
    throw new StoreOpenError(
      "The PostgreSQL store is not available in this build: openPostgresStore is missing",
    );
  }
  const url = config.store.postgres_url;
  const shown = redactUrl(url);
  const firstMs = opts.retryFirstMs ?? 1000;
  const maxMs = opts.retryMaxMs ?? 30_000;
  let waitMs = firstMs;
  log.info("opening postgres store", { url: shown });
  for (let attempt = 1;; attempt++) {
    if (opts.signal?.aborted) throw new StoreOpenError("Start-up cancelled");
    try {
      const store = await open({ ...base, url, cluster: config.cluster.nats_url !== "" });
      if (attempt > 1) log.info("database reachable again", { url: shown, attempts: attempt });
      return store;
    } catch (err) {
      if (!(err instanceof StoreUnreachableError)) throw err;
      // issue 29: say so and keep trying instead of exiting.
      log.warn("database unreachable, retrying", {
        url: shown,
        error: err.message.replaceAll(url, shown),
        attempt,
        retry_in_ms: waitMs,
      });
      await sleep(waitMs, opts.signal);
      waitMs = Math.min(maxMs, waitMs * 2);
    }
  }
}

/** Refuses a backup for a store that cannot make one with the same command. */
export function backupRefusal(config: Config): StoreUnsupportedError | null {
  return config.store.kind === "postgres" ? new StoreUnsupportedError(POSTGRES_BACKUP_HINT) : null;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
