import type { OpsLimits } from "../ops/context.ts";
import { DEFAULT_OPS_LIMITS } from "../ops/context.ts";
import { type PgConnection, type PgPool, query, type Row, type Rows } from "./sql.ts";

/**
 * What a PostgreSQL op works on: the batch's transaction, and the store's view of what is not in
 * the database (the SQLite writer keeps it in the Worker, `ops/context.ts`).
 */
export interface PgTx extends PgReader {
  readonly ctx: PgOpsContext;
}

/** What a read needs: prepared statements, on the pool (queries) or in a batch (ops). */
export interface PgReader {
  /** One prepared statement. */
  q<T = Row>(text: string, params?: readonly unknown[]): Promise<Rows<T>>;
}

/** A PostgreSQL write op: the async twin of an `Op` of `server/store/ops/`. */
export type PgOp<A, R> = (t: PgTx, args: A, now: number) => Promise<R>;

/** The limits and the live connections the messaging ops read (see `ops/context.ts`). */
export interface PgOpsContext {
  /** Endpoint ids with at least one live connection, handshaking included. */
  readonly connected: Set<string>;
  /** Endpoint id -> its live connection codes ("" when the caller gives none). */
  readonly connections: Map<string, Set<string>>;
  limits: OpsLimits;
  /**
   * A cluster node (issue 30): `connected` holds this node's connections only, so dispatch also
   * counts an endpoint online in the store as connected.
   */
  readonly cluster: boolean;
}

/** A fresh context with the defaults of spec 11.1. */
export function newPgOpsContext(o: { cluster?: boolean } = {}): PgOpsContext {
  return {
    connected: new Set(),
    connections: new Map(),
    limits: { ...DEFAULT_OPS_LIMITS },
    cluster: o.cluster ?? false,
  };
}

/** A {@link PgReader} on the pool: each statement on any free connection, in autocommit. */
export function readerOn(sql: PgPool): PgReader {
  return { q: (text, params) => query(sql, text, params) };
}

/** A {@link PgTx} over a reserved connection that is inside a transaction. */
export function txOn(conn: PgConnection, ctx: PgOpsContext): PgTx {
  return { q: (text, params) => query(conn, text, params), ctx };
}
