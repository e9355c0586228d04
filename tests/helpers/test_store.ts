// Which store the server suites run on (issue 29): `NIXMSG_TEST_STORE=sqlite` (the default) or
// `postgres`. tests/run.sh runs the store-neutral suites a second time with `postgres`, against
// the test PostgreSQL it starts (NIXMSG_TEST_POSTGRES_URL); every test server then gets a
// database of its own (tests/helpers/pg_test_store.ts), dropped when it closes.
import type { DatabaseSync } from "node:sqlite";
import { connectPostgres, type PgPool, query } from "../../server/store/postgres/sql.ts";

/** The store kinds a test server can run on. */
export type TestStoreKind = "sqlite" | "postgres";

function parseKind(raw: string | undefined): TestStoreKind {
  if (raw === undefined || raw === "" || raw === "sqlite") return "sqlite";
  if (raw === "postgres") return "postgres";
  throw new Error(`NIXMSG_TEST_STORE must be sqlite or postgres, not ${JSON.stringify(raw)}`);
}

/** The store of this test run. */
export const TEST_STORE: TestStoreKind = parseKind(Deno.env.get("NIXMSG_TEST_STORE"));

/**
 * `ignore` for a test that is about SQLite itself (its file, WAL, file backups, faults injected
 * through the file) and so runs only when {@linkcode TEST_STORE} is `sqlite`. Say why at the call.
 */
export function sqliteOnly(): boolean {
  return TEST_STORE !== "sqlite";
}

/** A row of an assertion query. */
export type TestRow = Record<string, unknown>;

/**
 * Read-only SQL on a test server's database, for assertions on stored rows, on either store:
 * the text uses `?` placeholders and the SQL both engines accept.
 */
export interface TestDb {
  all(sql: string, ...params: unknown[]): Promise<TestRow[]>;
  /** The first row, or undefined. */
  get(sql: string, ...params: unknown[]): Promise<TestRow | undefined>;
  close(): Promise<void>;
}

/** A {@linkcode TestDb} over the SQLite store's own read connection (closed with the server). */
export function sqliteTestDb(reader: () => DatabaseSync): TestDb {
  const all = (sql: string, ...params: unknown[]) =>
    Promise.resolve(
      reader().prepare(sql).all(...(params as (string | number | null)[])) as TestRow[],
    );
  return {
    all,
    get: async (sql, ...params) => (await all(sql, ...params))[0],
    close: () => Promise.resolve(),
  };
}

/** `?` placeholders to PostgreSQL's `$1, $2, …` (the assertion SQL has no `?` in literals). */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** A {@linkcode TestDb} on a PostgreSQL database of its own (one connection, opened lazily). */
export function postgresTestDb(url: string): TestDb {
  let pool: PgPool | null = null;
  const all = async (sql: string, ...params: unknown[]) => {
    pool ??= connectPostgres({ url, max: 1 });
    return [...await query<TestRow>(pool, numberPlaceholders(sql), params)];
  };
  return {
    all,
    get: async (sql, ...params) => (await all(sql, ...params))[0],
    async close() {
      if (pool !== null) await pool.end({ timeout: 5 });
      pool = null;
    },
  };
}
