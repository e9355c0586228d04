// The store interface (issue 29, DESIGN "Past one machine"): everything the server writes or
// reads goes through one `Store`, so the SQLite writer Worker + reader and PostgreSQL are
// interchangeable. Names, arguments and results are declared once, by the two registries:
//   - writes: `ops` in ./ops/mod.ts (`Ops`), typed through `OpArgs` / `OpResult` of ./op.ts;
//   - reads:  `queries` in ./queries/mod.ts (`Queries`), typed through `QueryArgs` / `QueryResult`
//     of ./query.ts.
// An implementation provides every name of both registries with the same arguments, results,
// refusals (`OpError` codes) and rules (idempotency by (sender, id), compare-and-set on delivery
// state, monotonic `seq` per recipient, quotas). The SQLite implementation runs the registry
// functions themselves (sqlite_store.ts); PostgreSQL has its own code per name
// (server/store/postgres/, opened by store_factory.ts through `openPostgresStore`).
import type { Logger } from "../log/log.ts";
import type { OpArgs, OpResult } from "./op.ts";
import type { Ops } from "./ops/mod.ts";
import type { QueryArgs, QueryResult } from "./query.ts";
import type { Queries } from "./queries/mod.ts";

export { OpError } from "./op_error.ts";

/** Which implementation a store is (config `store.kind`). */
export type StoreKind = "sqlite" | "postgres";

/** What {@link Store.onCommit} listeners hear after every batch (commit or failed commit). */
export interface CommitInfo {
  /** Ops in the batch. */
  ops: number;
  /** Wall time of the batch, BEGIN to COMMIT, in ms. */
  ms: number;
  /** False when BEGIN or COMMIT failed: every op of the batch was answered `busy`. */
  ok: boolean;
}

/**
 * The server's only way to the database.
 *
 * Writes (`run`): ops queued in one turn of the event loop are merged into one transaction (spec
 * 7.2 group commit: at most `max_batch` ops, each in its own SAVEPOINT or equivalent); the promise
 * settles only after the COMMIT that holds the op. It rejects with an `OpError`: the op's own
 * refusal (e.g. `not_found`, `quota_exceeded`, rolled back to its savepoint, the rest of the batch
 * commits), or `busy` when the batch could not be committed or the store is closed. Never `ok`
 * before COMMIT.
 *
 * Reads (`query`): run on a read connection, never through the writer; they see every commit whose
 * `run` promise has settled. A query may reject with an `OpError` refusal where its registry
 * function throws one (e.g. `group.get` → `not_member`). A failure of the database itself rejects
 * with `OpError("busy", undefined, message, { cause })` (PostgreSQL) or with node:sqlite's own
 * error (`ERR_SQLITE_ERROR`, `ERR_INVALID_STATE`; SQLite, as before the interface); callers treat
 * both as a store failure (`isStoreFailure` in server/http/router.ts): `busy` / 503, never 500.
 *
 * @example
 * ```ts
 * const store = await openStore(config, { log });
 * await store.run("settings.set", { key: "registration_enabled", value: "true" });
 * const row = await store.query("endpoint.self_row", { id: "dev1" });
 * await store.close();
 * ```
 */
export interface Store {
  readonly kind: StoreKind;

  /** Queues one write op; settles after its COMMIT (see above). Same shape as `Writer.run`. */
  run<K extends keyof Ops & string>(op: K, args: OpArgs<Ops[K]>): Promise<OpResult<Ops[K]>>;

  /** Runs one named read query. */
  query<K extends keyof Queries & string>(
    name: K,
    args: QueryArgs<Queries[K]>,
  ): Promise<QueryResult<Queries[K]>>;

  /** Ops queued or in flight (metric `nixmsg_writer_queue_length`). */
  readonly queueLength: number;
  /** False after a failed commit until a later COMMIT succeeds (spec 7.8). */
  readonly healthy: boolean;
  /** True once `close` was called or the store failed for good: `run` rejects `busy` from then. */
  readonly closed: boolean;
  /** Successful COMMITs so far. */
  readonly commits: number;
  /** Calls `fn` after every batch; returns a function that removes it. Listener errors are logged. */
  onCommit(fn: (info: CommitInfo) => void): () => void;

  /**
   * `/readyz` (spec 4.3, 7.8): true when a real write (`health.probe` op) committed and a read on a
   * fresh connection saw it, now or within about a second (one probe per second at most;
   * concurrent checks share one probe; failures are not cached). Never rejects.
   */
  ready(): Promise<boolean>;

  /**
   * `nixmsg backup` / online backup: a consistent copy to `outFile`. SQLite: the online backup API.
   * PostgreSQL: rejects with {@link StoreUnsupportedError} whose message points to `pg_dump`.
   */
  backup(outFile: string): Promise<void>;

  /**
   * Called after each hourly `housekeeping.cleanup` op (spec 7.6). SQLite: `wal_checkpoint(TRUNCATE)`
   * off the main thread. PostgreSQL: nothing to do (autovacuum), resolves at once.
   */
  afterHousekeeping(): Promise<void>;

  /**
   * Shutdown, first step (spec 7.8): stops accepting ops (`run` rejects `busy`), waits up to
   * `drainMs` for the queued ones to commit, rejects what is left with `busy`. Queries keep
   * working until {@link Store.close}, so committed requests can still be answered. Idempotent.
   */
  drain(drainMs: number): Promise<void>;

  /** Drains (at once, if `drain` was not called) and closes every connection. Idempotent. */
  close(drainMs?: number): Promise<void>;

  /**
   * Optional: the store as the target of `nixmsg store copy` (see {@link CopyTarget}). A store
   * without it cannot receive a copy in this build.
   */
  copyTarget?(): CopyTarget;
}

/**
 * The tables `nixmsg store copy` moves, parents before children (foreign keys). `quota_counts`
 * is not among them: the target derives it from the copied messages and deliveries, as its
 * migration would. `schema_migrations` is the target's own.
 */
export const COPY_TABLES = [
  "settings",
  "endpoints",
  "webhooks",
  "groups",
  "group_members",
  "talk_grants",
  "api_tokens",
  "admin_sessions",
  "messages",
  "message_bodies",
  "deliveries",
  "receipts",
  "send_keys",
  "audit_log",
] as const;

/** One table of {@link COPY_TABLES}. */
export type CopyTable = typeof COPY_TABLES[number];

/** A cell as SQLite stores it. */
export type CopyValue = string | number | bigint | Uint8Array | null;

/**
 * What `nixmsg store copy` needs of the target store: rows go in as they are, with their ids,
 * `seq` and `receipt_id` kept, and the target's id sequences continue above the copied ones.
 * Column names are those of the SQLite schema.
 */
export interface CopyTarget {
  /** Rows in `table` now (the copy refuses a target that is not empty, and checks at the end). */
  countRows(table: CopyTable): Promise<number>;
  /** Inserts one chunk of rows (at most a few thousand) in one transaction. */
  insertRows(
    table: CopyTable,
    columns: readonly string[],
    rows: readonly (readonly CopyValue[])[],
  ): Promise<void>;
  /** Called once after the last chunk: sequences, derived tables, statistics. */
  finish(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Another store's code for every op, keyed like `ops`: same args and result, async, run inside
 * the batch's transaction `tx`. `satisfies OpImplementations<Tx>` makes the compiler refuse a
 * missing or mistyped op.
 */
export type OpImplementations<Tx> = {
  readonly [K in keyof Ops]: (
    tx: Tx,
    args: OpArgs<Ops[K]>,
    now: number,
  ) => Promise<OpResult<Ops[K]>>;
};

/** Another store's code for every query, keyed like `queries` (see {@link OpImplementations}). */
export type QueryImplementations<Db> = {
  readonly [K in keyof Queries]: (
    db: Db,
    args: QueryArgs<Queries[K]>,
  ) => Promise<QueryResult<Queries[K]>>;
};

/** Options that every implementation's open function takes. */
export interface StoreOpenOptions {
  /** Most ops per transaction (config `writer.max_batch`, spec 7.2: 256). */
  maxBatch: number;
  /** Longest wait to fill a batch (config `writer.max_wait_ms`, spec 7.2: 2 ms). */
  maxWaitMs: number;
  /** The `now` passed to ops, read at enqueue time. */
  clock?: () => number;
  log?: Logger;
}

/**
 * The options of `openPostgresStore(opts)`, exported by server/store/postgres/mod.ts:
 * `export function openPostgresStore(opts: PostgresStoreOptions): Promise<Store>`.
 * It connects, runs the PostgreSQL migrations (numbered, `schema_migrations`; before migrating a
 * non-empty database it logs how to back up with pg_dump instead of copying a file), and resolves
 * with a ready store. When the server cannot be reached (connection refused, DNS, timeout, the
 * database starting up) it rejects with {@link StoreUnreachableError}, and the caller retries with
 * backoff; any other error (bad credentials, a schema newer than this build) is final.
 */
export interface PostgresStoreOptions extends StoreOpenOptions {
  /** `postgres://` or `postgresql://` URL with credentials; never log it unredacted. */
  url: string;
  /** One node of a cluster (issue 30, `cluster.nats_url` set): several servers share the store. */
  cluster?: boolean;
}

/** The database cannot be reached now; opening may succeed later (serve retries with backoff). */
export class StoreUnreachableError extends Error {
  override name = "StoreUnreachableError";
}

/** The store does not offer this (PostgreSQL `backup`: use pg_dump). */
export class StoreUnsupportedError extends Error {
  override name = "StoreUnsupportedError";
}
