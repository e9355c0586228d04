import postgres from "postgres";

// The one place that opens PostgreSQL connections (docs/store_postgres.md). int8 columns (times in
// ms, seq, receipt ids, counts) come back as numbers, as node:sqlite gives them: every value the
// store keeps is below 2^53.

/** A row as the driver returns it. */
export type Row = Record<string, unknown>;

/** Rows of a statement, with `count` = rows changed (INSERT/UPDATE/DELETE) or returned. */
export type Rows<T> = T[] & { count: number; command: string };

/** The connection pool of a PostgreSQL store. */
export type PgPool = postgres.Sql<Record<string, never>>;

/** One connection taken out of the pool for a batch (`sql.reserve()`). */
export type PgConnection = postgres.ReservedSql<Record<string, never>>;

/** Options of {@link connectPostgres}. */
export interface ConnectOptions {
  /** `postgres://user:password@host:port/db`; never logged whole (`redactUrl` of server/config/config.ts). */
  url: string;
  /** Tables live in this schema (default: the server's search_path, normally `public`). */
  schema?: string;
  /** Pool size; the writer holds one connection per batch. Default 4. */
  max?: number;
  /** Seconds to wait for a connection; default 10. */
  connectTimeout?: number;
  /**
   * Longest wait for a row lock another session holds, in ms (default 10 s): an op stuck behind
   * a lock fails (`busy`) instead of stalling every later batch.
   */
  lockTimeoutMs?: number;
}

const INT8_OID = 20;

/** Opens a pool (connections are made on first use). */
export function connectPostgres(opts: ConnectOptions): PgPool {
  const connection: Record<string, string> = { application_name: "nixmsg" };
  // spec 7.2: nothing is answered before it is durable; a server default of off is overridden.
  connection.synchronous_commit = "on";
  connection.lock_timeout = `${opts.lockTimeoutMs ?? 10_000}ms`;
  // A session that dies inside a transaction must not hold its locks for long.
  connection.idle_in_transaction_session_timeout = "60s";
  if (opts.schema !== undefined) connection.search_path = opts.schema;
  return postgres(opts.url, {
    max: opts.max ?? 4,
    connect_timeout: opts.connectTimeout ?? 10,
    onnotice: () => {},
    connection,
    types: {
      int8: {
        to: INT8_OID,
        from: [INT8_OID],
        serialize: (x: number | bigint | string) => String(x),
        parse: (x: string) => Number(x),
      },
    },
  }) as unknown as PgPool;
}

/** Runs one prepared statement on `conn` (a pool or a reserved connection). */
export function query<T = Row>(
  conn: PgPool | PgConnection,
  text: string,
  params: readonly unknown[] = [],
): Promise<Rows<T>> {
  return conn.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
    prepare: true,
  }) as unknown as Promise<Rows<T>>;
}

/** Runs statements without parameters (DDL, several separated by `;`) in the simple protocol. */
export function execScript(conn: PgPool | PgConnection, text: string): Promise<unknown> {
  return conn.unsafe(text) as unknown as Promise<unknown>;
}

/**
 * Sends `text` now, without waiting for its answer (the driver's queries are lazy otherwise), so
 * later statements are pipelined behind it. Await the result to see its error; until then a
 * failure is not reported as unhandled.
 */
export function sendNow<T = Row>(
  conn: PgConnection,
  text: string,
  params: readonly unknown[] = [],
): Promise<Rows<T>> {
  // The extended protocol: the driver pipelines it. A simple-protocol query waits for every
  // earlier answer first, which made a savepoint cost a round trip (5x slower batches).
  const q = query<T>(conn, text, params);
  q.catch(() => {});
  return q;
}
