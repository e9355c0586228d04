import type { DatabaseSync } from "node:sqlite";
import type { Logger } from "../log/log.ts";
import { backupDatabase } from "./backup.ts";
import { Checkpointer } from "./checkpointer.ts";
import type { Synchronous } from "./db.ts";
import { migrate } from "./migrations.ts";
import type { OpArgs, OpResult } from "./op.ts";
import type { Ops } from "./ops/mod.ts";
import { type Queries, queries } from "./queries/mod.ts";
import type { QueryArgs, QueryResult } from "./query.ts";
import { openReader } from "./reader.ts";
import { Readiness } from "./readiness.ts";
import type { CommitInfo, Store, StoreOpenOptions } from "./store.ts";
import { Writer } from "./writer.ts";

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions extends StoreOpenOptions {
  /** The database file; created and migrated when needed. */
  path: string;
  /** Where the pre-migration copy goes (spec 7.7). */
  backupDir: string;
  /** spec 7.7: FULL unless configured otherwise. */
  synchronous: Synchronous;
}

type AnyQuery = (db: DatabaseSync, args: unknown) => unknown;

/** Runs query `name` of the registry on `db`, settled at once (no thread hop, no queue). */
function runQuery<K extends keyof Queries & string>(
  db: DatabaseSync,
  name: K,
  args: QueryArgs<Queries[K]>,
): Promise<QueryResult<Queries[K]>> {
  try {
    const fn = queries[name] as AnyQuery;
    return Promise.resolve(fn(db, args) as QueryResult<Queries[K]>);
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * The read side of a store over one SQLite connection, for unit tests that hold a database but
 * no store.
 *
 * @example
 * ```ts
 * const cache = new MsgFrameCache(queriesOn(db));
 * ```
 */
export function queriesOn(db: DatabaseSync): Pick<Store, "query"> {
  return { query: (name, args) => runQuery(db, name, args) };
}

/**
 * The embedded store: the writer Worker (DESIGN "The writer") for ops, one read-only connection
 * on the main thread for queries (spec 7.2), the checkpointer Worker and the readiness probe.
 * A query runs synchronously on the read connection and answers with a settled promise: no thread
 * hop, no queue.
 */
export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  /**
   * The main thread's read-only connection. Tests may swap in a broken one to simulate read
   * failures; nothing else should touch it.
   */
  reader: DatabaseSync;
  /** The writer; `run`, `commits` and `onCommit` are its own. */
  readonly writer: Writer;
  readonly #path: string;
  readonly #checkpointer: Checkpointer;
  readonly #readiness: Readiness;
  #closing: Promise<void> | null = null;

  constructor(
    path: string,
    reader: DatabaseSync,
    writer: Writer,
    checkpointer: Checkpointer,
    log: Logger | undefined,
  ) {
    this.#path = path;
    this.reader = reader;
    this.writer = writer;
    this.#checkpointer = checkpointer;
    // spec 4.3, 7.8: ready means a real write and a real read succeed now.
    this.#readiness = new Readiness(writer, { path, log });
  }

  run<K extends keyof Ops & string>(op: K, args: OpArgs<Ops[K]>): Promise<OpResult<Ops[K]>> {
    return this.writer.run(op, args);
  }

  query<K extends keyof Queries & string>(
    name: K,
    args: QueryArgs<Queries[K]>,
  ): Promise<QueryResult<Queries[K]>> {
    return runQuery(this.reader, name, args);
  }

  get queueLength(): number {
    return this.writer.queueLength;
  }

  get healthy(): boolean {
    return this.writer.healthy;
  }

  get closed(): boolean {
    return this.writer.closed;
  }

  get commits(): number {
    return this.writer.commits;
  }

  onCommit(fn: (info: CommitInfo) => void): () => void {
    return this.writer.onCommit(fn);
  }

  ready(): Promise<boolean> {
    return this.#readiness.check();
  }

  async backup(outFile: string): Promise<void> {
    await backupDatabase(this.#path, outFile);
  }

  async afterHousekeeping(): Promise<void> {
    // spec 7.6: it waits for readers and the writer, so it runs in the checkpointer's Worker.
    await this.#checkpointer.truncate();
  }

  drain(drainMs: number): Promise<void> {
    return this.writer.close(drainMs);
  }

  close(drainMs = 0): Promise<void> {
    this.#closing ??= (async () => {
      await this.writer.close(drainMs);
      await this.#checkpointer.close();
      this.reader.close();
    })();
    return this.#closing;
  }
}

/**
 * Migrates the database file (with its pre-migration copy), then opens the read connection, the
 * writer and the checkpointer.
 *
 * @example
 * ```ts
 * const store = await openSqliteStore({
 *   path: "data/nixmsg.db", backupDir: "data/backup", synchronous: "FULL",
 *   maxBatch: 256, maxWaitMs: 2,
 * });
 * ```
 */
export async function openSqliteStore(opts: SqliteStoreOptions): Promise<SqliteStore> {
  const { path, log } = opts;
  const mig = await migrate(path, { backupDir: opts.backupDir, log });
  if (mig.from !== mig.to) log?.info("database migrated", { from: mig.from, to: mig.to });
  const reader = openReader(path);
  let writer: Writer;
  try {
    writer = await Writer.start({
      path,
      synchronous: opts.synchronous,
      maxBatch: opts.maxBatch,
      maxWaitMs: opts.maxWaitMs,
      clock: opts.clock,
      log,
    });
  } catch (err) {
    reader.close();
    throw err;
  }
  const checkpointer = Checkpointer.start(path, opts.synchronous);
  return new SqliteStore(path, reader, writer, checkpointer, log);
}
