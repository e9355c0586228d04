import type { OpsLimits } from "../ops/context.ts";
import { DEFAULT_OPS_LIMITS } from "../ops/context.ts";
import { type PgConnection, type PgPool, query, type Row, type Rows, sendNow } from "./sql.ts";

/**
 * What a PostgreSQL op works on: the batch's transaction, and the store's view of what is not in
 * the database (the SQLite writer keeps it in the Worker, `ops/context.ts`).
 */
export interface PgTx extends PgReader {
  readonly ctx: PgOpsContext;
  /**
   * `PgReader.q`; `changed` tells from the answer whether the statement changed anything (by
   * default: a statement other than a `SELECT` whose row count is above 0). See `OpTx.dirty`.
   */
  q<T = Row>(
    text: string,
    params?: readonly unknown[],
    changed?: (rows: Rows<T>) => boolean,
  ): Promise<Rows<T>>;
  /**
   * True in a pipelined batch: the op may send statements before it has read what decides
   * them, and must throw an error other than an `OpError` when it finds it should not have (the
   * batch then runs again one op at a time, where this is false).
   */
  readonly speculative: boolean;
  /**
   * The op will issue no more statements. Called before the op's first `await`, it lets a
   * pipelined batch send the next op's statements without waiting for this op's answers.
   */
  seal(): void;
  /**
   * Sends a write whose answer the op does not need (no rows, no count), without waiting for it:
   * it costs no round trip of its own. Its failure still fails the op: the batch runner checks
   * every such statement before COMMIT (see `PgWriter`).
   */
  send(text: string, params?: readonly unknown[]): void;
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

/** A statement that only reads (row locks aside, which COMMIT or ROLLBACK releases alike). */
const READ = /^\s*SELECT\b/i;

/**
 * The {@link PgTx} of one op over a reserved connection that is inside a transaction.
 *
 * Pipelined (the batch runner's normal mode): every statement is sent at once, in call order,
 * and `send`s are not waited for; the runner checks them all (`issued`) before COMMIT. One at a time
 * (`pipelined: false`): each statement waits for the one before it, and a failed `send` throws
 * from the op's next statement (or from `settle`), exactly where an awaited statement would.
 */
export class OpTx implements PgTx {
  readonly ctx: PgOpsContext;
  /** Every statement of the op, for the batch runner's checks. */
  readonly issued: Promise<unknown>[] = [];
  /**
   * True once a statement of the op may have changed something: a `send`, or a statement other
   * than a `SELECT` that answered a row count above 0. (Every statement of the ops counts the
   * rows of its data-modifying parts in its main statement's count: each `WITH … INSERT/UPDATE`
   * feeds the next.) An op that refuses while clean needs no rollback.
   */
  dirty = false;
  #conn: PgConnection;
  #pipelined: boolean;
  #ended = false;
  #sealed = false;
  #last: Promise<unknown> = Promise.resolve();
  #failed: { error: unknown } | undefined;

  constructor(conn: PgConnection, ctx: PgOpsContext, opts: { pipelined: boolean }) {
    this.#conn = conn;
    this.ctx = ctx;
    this.#pipelined = opts.pipelined;
  }

  get speculative(): boolean {
    return this.#pipelined;
  }

  /** True once the op called `seal`. */
  get sealed(): boolean {
    return this.#sealed;
  }

  seal(): void {
    this.#sealed = true;
  }

  q<T = Row>(
    text: string,
    params: readonly unknown[] = [],
    changed?: (rows: Rows<T>) => boolean,
  ): Promise<Rows<T>> {
    if (this.#ended || this.#sealed) {
      return Promise.reject(new Error(`Statement after its op ended: ${text}`));
    }
    if (this.#pipelined) {
      const run = sendNow<T>(this.#conn, text, params);
      const changes = changed ?? (READ.test(text) ? () => false : (r: Rows<T>) => r.count > 0);
      run.then((r) => changes(r) && (this.dirty = true), () => {});
      this.issued.push(run);
      return run;
    }
    const run = this.#last.then(() => {
      const failed = this.#failed;
      this.#failed = undefined;
      if (failed !== undefined) throw failed.error;
      return query<T>(this.#conn, text, params);
    });
    this.#last = run.catch(() => {});
    this.issued.push(this.#last);
    return run;
  }

  send(text: string, params: readonly unknown[] = []): void {
    if (this.#ended || this.#sealed) throw new Error(`Statement after its op ended: ${text}`);
    this.dirty = true;
    const run = this.#pipelined
      ? sendNow(this.#conn, text, params)
      : this.#last.then(() => query(this.#conn, text, params));
    if (!this.#pipelined) this.#last = run.catch((error) => (this.#failed ??= { error }));
    run.catch(() => {});
    this.issued.push(run);
  }

  /** One at a time: waits for every statement so far; throws a `send`'s failure not yet seen. */
  async settle(): Promise<void> {
    await this.#last;
    const failed = this.#failed;
    this.#failed = undefined;
    if (failed !== undefined) throw failed.error;
  }

  /** The op is over: a statement issued later (by a part of a failed op) is refused. */
  end(): void {
    this.#ended = true;
  }
}

/**
 * Runs `op` on a reserved connection that is inside a transaction (a test holding its own
 * transaction), one statement at a time; resolves when every statement of the op has answered.
 */
export async function runOpOn<A, R>(
  conn: PgConnection,
  ctx: PgOpsContext,
  op: PgOp<A, R>,
  args: A,
  now: number,
): Promise<R> {
  const tx = new OpTx(conn, ctx, { pipelined: false });
  try {
    const value = await op(tx, args, now);
    await tx.settle();
    return value;
  } finally {
    tx.end();
  }
}

/** What {@link restorePgOpsContext} puts back: the context as a batch found it. */
export interface PgOpsContextCopy {
  connected: string[];
  connections: [string, string[]][];
  limits: OpsLimits;
}

/** A copy of `ctx`, taken before a batch that may have to run again. */
export function copyPgOpsContext(ctx: PgOpsContext): PgOpsContextCopy {
  return {
    connected: [...ctx.connected],
    connections: [...ctx.connections].map(([id, codes]) => [id, [...codes]]),
    limits: ctx.limits,
  };
}

/** Puts `copy` back into `ctx` (the same objects, which the store shares). */
export function restorePgOpsContext(ctx: PgOpsContext, copy: PgOpsContextCopy): void {
  ctx.connections.clear();
  ctx.connected.clear();
  for (const id of copy.connected) ctx.connected.add(id);
  for (const [id, codes] of copy.connections) ctx.connections.set(id, new Set(codes));
  ctx.limits = copy.limits;
}
