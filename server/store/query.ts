import type { DatabaseSync } from "node:sqlite";

/**
 * A read query (issue 29): a plain function over the SQLite read connection. Its args and result
 * are plain data; the PostgreSQL store implements the same name with the same args and result.
 * It may throw an `OpError` refusal (e.g. `not_found`).
 */
export type Query<A, R> = (db: DatabaseSync, args: A) => R;

/** A table of queries by name, such as `queries` in `queries/mod.ts`. */
export type QueryRegistry = Record<string, Query<never, unknown>>;

/** The `args` type of a query. */
export type QueryArgs<F> = F extends (db: DatabaseSync, args: infer A) => unknown ? A : never;

/** The result type of a query. */
export type QueryResult<F> = F extends (db: DatabaseSync, args: never) => infer R ? R : never;
