// The PostgreSQL store (issue 29): the same write ops and read queries as the SQLite store, on a
// PostgreSQL server. See docs/store_postgres.md.
import { redactUrl } from "../../config/config.ts";
import type { Logger } from "../../log/log.ts";
import { HEALTH_PROBE_KEY } from "../ops/health.ts";
import { OpError } from "../op_error.ts";
import {
  type CommitInfo,
  type CopyTarget,
  type PostgresStoreOptions,
  type Store,
  StoreUnreachableError,
  StoreUnsupportedError,
} from "../store.ts";
import { pgCopyTarget } from "./copy_target.ts";
import { migratePostgres, pgDumpCommand } from "./migrations.ts";
import { newPgOpsContext, type PgReader, readerOn } from "./op.ts";
import { pgOps } from "./ops/mod.ts";
import { pgQueries } from "./queries/mod.ts";
import { connectPostgres, type PgPool, query } from "./sql.ts";
import { PgWriter } from "./writer.ts";

/** Options of {@link openPostgresStore}. */
export interface OpenPostgresOptions extends PostgresStoreOptions {
  /** The schema the tables live in; the server's search_path (normally `public`) when absent. */
  schema?: string;
  /** Pool size: the writer's connection and the readers'. Default 8. */
  poolSize?: number;
}

const SQL_PROBE_READ = "SELECT value FROM settings WHERE key = $1";
/** One real probe per this many ms at most (`Store.ready`). */
const PROBE_EVERY_MS = 1000;

/**
 * Connects, migrates (PostgreSQL's own numbered migrations; before upgrading a database in use it
 * logs the pg_dump command to back it up first) and returns a ready store.
 *
 * @throws {StoreUnreachableError} when the server cannot be reached now (refused, DNS, timeout,
 * starting up); the caller retries with backoff. Any other error (credentials, a missing
 * database, a schema newer than this build) is final.
 * @example
 * ```ts
 * const store = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2, log });
 * await store.run("settings.set", { key: "registration_enabled", value: "true" });
 * await store.close();
 * ```
 */
export async function openPostgresStore(opts: OpenPostgresOptions): Promise<Store> {
  const sql = connectPostgres({ url: opts.url, schema: opts.schema, max: opts.poolSize ?? 8 });
  try {
    await migratePostgres(sql, { url: opts.url, schema: opts.schema, log: opts.log });
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw classify(err, opts.url);
  }
  opts.log?.info("PostgreSQL store open", { url: redactUrl(opts.url), schema: opts.schema });
  return new PostgresStore(sql, opts);
}

/** Errors that mean "not reachable now": the network, or a server not accepting yet. */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P03", // cannot_connect_now: starting up or shutting down
  "57P01", // admin_shutdown
  "53300", // too_many_connections
]);

function classify(err: unknown, url: string): Error {
  const e = err instanceof Error ? err : new Error(String(err));
  const cause = (e as { cause?: unknown }).cause;
  const code = (e as { code?: string }).code ?? (cause as { code?: string } | undefined)?.code;
  // Never let the URL's password travel in a message.
  const password = safePassword(url);
  const message = password === "" ? e.message : e.message.split(password).join("***");
  if (code !== undefined && UNREACHABLE_CODES.has(code)) {
    return new StoreUnreachableError(
      `PostgreSQL at ${redactUrl(url)} cannot be reached: ${message}`,
      { cause: e },
    );
  }
  return e;
}

function safePassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return "";
  }
}

class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  #sql: PgPool;
  #writer: PgWriter;
  #reader: PgReader;
  #url: string;
  #schema: string | undefined;
  #log: Logger | undefined;
  #closing: Promise<void> | null = null;
  #probe: Promise<boolean> | null = null;
  #probedAt = -Infinity;
  #probeOk = false;

  constructor(sql: PgPool, opts: OpenPostgresOptions) {
    this.#sql = sql;
    this.#url = opts.url;
    this.#schema = opts.schema;
    this.#log = opts.log;
    this.#reader = readerOn(sql);
    this.#writer = new PgWriter(sql, pgOps, newPgOpsContext({ cluster: opts.cluster }), {
      maxBatch: opts.maxBatch,
      clock: opts.clock,
      log: opts.log,
    });
  }

  run: Store["run"] = (op, args) => this.#writer.run(op, args);

  query: Store["query"] = async (name, args) => {
    if (this.#closing !== null) throw new OpError("busy", undefined, "Store is closed");
    const fn = pgQueries[name] as unknown as (r: PgReader, a: unknown) => Promise<never>;
    try {
      return await fn(this.#reader, args);
    } catch (err) {
      if (err instanceof OpError) throw err;
      const message = err instanceof Error ? err.message : String(err);
      throw new OpError("busy", undefined, `Query ${name} failed`, { cause: message });
    }
  };

  get queueLength(): number {
    return this.#writer.backlog;
  }

  get healthy(): boolean {
    return this.#writer.healthy;
  }

  get closed(): boolean {
    return this.#writer.closed;
  }

  get commits(): number {
    return this.#writer.commits;
  }

  onCommit(fn: (info: CommitInfo) => void): () => void {
    return this.#writer.onCommit(fn);
  }

  /** spec 4.3, 7.8: a real write committed and then read back; at most one probe a second. */
  ready(): Promise<boolean> {
    if (this.#probe !== null) return this.#probe;
    if (this.#probeOk && performance.now() - this.#probedAt < PROBE_EVERY_MS) {
      return Promise.resolve(true);
    }
    this.#probe = this.#runProbe().then((ok) => {
      this.#probe = null;
      this.#probeOk = ok;
      this.#probedAt = performance.now();
      return ok;
    });
    return this.#probe;
  }

  async #runProbe(): Promise<boolean> {
    const token = crypto.randomUUID();
    try {
      await this.#writer.run("health.probe", { token });
      const rows = await query<{ value: string }>(this.#sql, SQL_PROBE_READ, [HEALTH_PROBE_KEY]);
      return rows[0]?.value === token;
    } catch (err) {
      this.#log?.warn("Readiness probe failed", {
        error: err instanceof Error ? err.message : String(err),
      });
      return false;
    }
  }

  backup(_outFile: string): Promise<void> {
    return Promise.reject(
      new StoreUnsupportedError(
        `The PostgreSQL store is backed up with pg_dump, not by NixMsg: ${
          pgDumpCommand(this.#url, this.#schema, Date.now())
        }`,
      ),
    );
  }

  /** The target of `nixmsg store copy`: the store's pool, rows as SQLite holds them. */
  copyTarget(): CopyTarget {
    return pgCopyTarget(this.#sql);
  }

  afterHousekeeping(): Promise<void> {
    // Autovacuum reclaims what housekeeping deleted; there is no WAL file of ours to truncate.
    return Promise.resolve();
  }

  /** Stops the writer (spec 7.8); queries keep working until {@link close}. */
  drain(drainMs: number): Promise<void> {
    return this.#writer.close(drainMs);
  }

  close(drainMs = 0): Promise<void> {
    if (this.#closing === null) {
      this.#closing = (async () => {
        await this.#writer.close(drainMs);
        await this.#sql.end({ timeout: 5 });
      })();
    }
    return this.#closing;
  }
}
