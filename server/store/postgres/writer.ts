import type { Logger } from "../../log/log.ts";
import { fromWireError, type OpArgs, OpError, type OpResult, toWireError } from "../op.ts";
import type { Ops } from "../ops/mod.ts";
import type { CommitInfo } from "../writer.ts";
import { copyPgOpsContext, OpTx, type PgOp, type PgOpsContext, restorePgOpsContext } from "./op.ts";
import { execScript, type PgConnection, type PgPool, query, sendNow } from "./sql.ts";

/** A table of PostgreSQL ops by name, such as `pgOps` in `ops/mod.ts`. */
export type PgOpRegistry = Record<string, PgOp<never, unknown>>;

/** Held by every batch of a cluster node until its COMMIT (not the migrations' key). */
const SQL_CLUSTER_BATCH_LOCK = "SELECT pg_advisory_xact_lock(7269826384)";

/** Options of {@link PgWriter}. */
export interface PgWriterOptions {
  /** Most ops per transaction (spec 7.2: 256). */
  maxBatch?: number;
  /** The `now` passed to ops, read at enqueue time. */
  clock?: () => number;
  log?: Logger;
  /**
   * Longest wait for a connection of the pool, in ms (default 5 s). While the database is down
   * the driver's `reserve()` was seen to wait forever; a batch that gets no connection fails with
   * `busy` instead, having sent nothing.
   */
  reserveTimeoutMs?: number;
}

interface Queued {
  op: string;
  args: unknown;
  now: number;
  resolve: (value: unknown) => void;
  reject: (err: OpError) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: OpError };

/** The place of a sealed op's answer until it is settled. */
const NOT_YET: Settled = { ok: true, value: undefined };

/** The pipelined attempt cannot answer every op alone: run the batch again one at a time. */
class RunAgainOneByOne extends Error {}

function runAgain(cause: unknown): RunAgainOneByOne {
  return new RunAgainOneByOne(cause instanceof Error ? cause.message : String(cause), { cause });
}

/**
 * The PostgreSQL twin of the SQLite writer (DESIGN "The writer", spec 7.2): ops queued while no
 * batch runs start one at once; ops queued during a batch form the next one (DESIGN 12). A batch
 * is one transaction on one connection; an op that throws (a refusal, an `OpError`, or a
 * statement error) is rolled back alone while its batch mates commit (below: how). No op is
 * settled before the COMMIT; when BEGIN, a savepoint or the COMMIT fails, every op of the batch
 * is rejected with `busy` (nothing of it is durable), as the SQLite writer does.
 * `synchronous_commit` is forced on for the store's connections (`sql.ts`).
 *
 * Every op is guarded: PostgreSQL aborts the whole transaction on any statement error, so the
 * SQLite runner's unguarded ops would buy nothing here.
 *
 * Statements and round trips: a batch is first run pipelined, without savepoints. Every write
 * an op does not need the answer of (`PgTx.send`) goes out without waiting, so the batch waits
 * only for the statements whose answers decide what an op does next; and an op that seals itself
 * (`PgTx.seal`: all its statements sent before its first await) does not hold the next op up
 * at all, so a run of such ops costs one round trip. Each statement still runs after every
 * statement of the ops before it, as when the ops run one after another. An op that refuses before
 * it changed anything is answered with its refusal (there is nothing to roll back). Any other
 * failure (a refusal after a change, a statement error, a failed statement nobody waited for)
 * cannot be rolled back for that op alone without savepoints, so the transaction is rolled back,
 * the live-connection context put back as it was, and the batch runs again one op at a time,
 * each in `SAVEPOINT op` and each statement waiting for the one before (the runner this class
 * had before), which rolls the failing op back alone. Either way nothing is settled before the
 * COMMIT.
 */
export class PgWriter<R extends PgOpRegistry = PgOpRegistry> {
  #sql: PgPool;
  #reserveTimeoutMs: number;
  #ops: R;
  #ctx: PgOpsContext;
  #maxBatch: number;
  #clock: () => number;
  #log: Logger | undefined;
  #queue: Queued[] = [];
  #running = false;
  #scheduled = false;
  #closed = false;
  #healthy = true;
  #commits = 0;
  #inBatch = 0;
  #idle: (() => void)[] = [];
  #listeners = new Set<(info: CommitInfo) => void>();

  constructor(sql: PgPool, ops: R, ctx: PgOpsContext, opts: PgWriterOptions = {}) {
    this.#sql = sql;
    this.#ops = ops;
    this.#ctx = ctx;
    this.#maxBatch = opts.maxBatch ?? 256;
    this.#clock = opts.clock ?? Date.now;
    this.#log = opts.log;
    this.#reserveTimeoutMs = opts.reserveTimeoutMs ?? 5_000;
  }

  /**
   * Queues op `name`; resolves with its result after the COMMIT of its batch, or rejects with an
   * {@link OpError}: the op's own, or `busy` when the write failed.
   */
  run<K extends keyof Ops & string>(name: K, args: OpArgs<Ops[K]>): Promise<OpResult<Ops[K]>>;
  run(name: string, args: unknown): Promise<unknown>;
  run(name: string, args: unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(new OpError("busy", undefined, "Writer is closed"));
    const now = this.#clock();
    return new Promise((resolve, reject) => {
      this.#queue.push({ op: name, args, now, resolve, reject });
      this.#schedule();
    });
  }

  /** False after a failed batch, until one commits again (spec 7.8 `/readyz`). */
  get healthy(): boolean {
    return this.#healthy;
  }

  /** Batches committed so far. */
  get commits(): number {
    return this.#commits;
  }

  /** Ops queued or in the running batch, not yet settled. */
  get backlog(): number {
    return this.#queue.length + this.#inBatch;
  }

  /** True once `close` was called: `run` rejects with `busy` from then on. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Calls `fn` after every batch, committed or failed; returns the unsubscribe function. */
  onCommit(fn: (info: CommitInfo) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Stops accepting ops and waits up to `drainMs` for the queued ones to commit (spec 7.8); what
   * is left is rejected with `busy`.
   */
  async close(drainMs = 5000): Promise<void> {
    this.#closed = true;
    if (this.#running || this.#queue.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#idle.push(resolve)),
        new Promise<void>((resolve) => timer = setTimeout(resolve, drainMs)),
      ]);
      clearTimeout(timer);
    }
    for (const item of this.#queue.splice(0)) {
      item.reject(new OpError("busy", undefined, "Writer closed before the op was committed"));
    }
  }

  #schedule(): void {
    if (this.#running || this.#scheduled) return;
    this.#scheduled = true;
    // Ops queued in this turn join the batch (DESIGN 12: no fixed wait).
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        this.#inBatch = batch.length;
        await this.#runBatch(batch);
        this.#inBatch = 0;
      }
    } finally {
      this.#running = false;
      for (const fn of this.#idle.splice(0)) fn();
    }
  }

  async #runBatch(batch: Queued[]): Promise<void> {
    const started = performance.now();
    let conn: PgConnection | undefined;
    let settled: Settled[];
    try {
      conn = await this.#reserve();
      settled = await this.#attemptTwice(conn, batch);
    } catch (err) {
      // BEGIN, a savepoint or COMMIT failed, or the connection broke: nothing of this batch is
      // durable, so nothing succeeds (spec 7.8: busy, and readiness fails until a commit).
      if (conn !== undefined) await execScript(conn, "ROLLBACK").catch(() => {});
      conn?.release();
      this.#healthy = false;
      const error = err instanceof Error ? err.message : String(err);
      this.#log?.error("Write batch failed", { ops: batch.length, error });
      for (const item of batch) {
        item.reject(
          new OpError("busy", undefined, `Op ${item.op} was not committed`, { cause: error }),
        );
      }
      this.#notify({ ops: batch.length, ms: performance.now() - started, ok: false });
      return;
    }
    conn.release();
    this.#healthy = true;
    this.#commits++;
    batch.forEach((item, i) => {
      const s = settled[i];
      if (s.ok) item.resolve(s.value);
      else item.reject(s.error);
    });
    this.#notify({ ops: batch.length, ms: performance.now() - started, ok: true });
  }

  /** The batch pipelined; when that cannot tell whose statement failed, one at a time. */
  async #attemptTwice(conn: PgConnection, batch: Queued[]): Promise<Settled[]> {
    const before = copyPgOpsContext(this.#ctx);
    try {
      return await this.#attempt(conn, batch, true);
    } catch (err) {
      if (!(err instanceof RunAgainOneByOne)) throw err;
      await query(conn, "ROLLBACK");
      restorePgOpsContext(this.#ctx, before);
      this.#log?.debug("Write batch runs again one op at a time", {
        ops: batch.length,
        error: err.message,
      });
      return await this.#attempt(conn, batch, false);
    }
  }

  /** A reserved connection, or an error after `reserveTimeoutMs` (a late one is released). */
  #reserve(): Promise<PgConnection> {
    const reserving = this.#sql.reserve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reserving.then((c) => c.release(), () => {});
        reject(new Error(`No database connection within ${this.#reserveTimeoutMs} ms`));
      }, this.#reserveTimeoutMs);
    });
    return Promise.race([reserving, late]).finally(() => clearTimeout(timer));
  }

  /**
   * BEGIN, every op, COMMIT; throws when the transaction is lost.
   *
   * Pipelined: no savepoints. An op that refuses (`OpError`) while clean (nothing of it changed
   * anything, `OpTx.dirty`) is answered with its refusal and the batch goes on; any other
   * failure (a refusal after a change, a statement error, a failed statement that nobody waited
   * for) throws {@link RunAgainOneByOne}. One at a time: each op in `SAVEPOINT op`, rolled back
   * alone when it fails.
   */
  async #attempt(conn: PgConnection, batch: Queued[], pipelined: boolean): Promise<Settled[]> {
    // Statements nobody waited for: BEGIN, savepoint releases, the ops' sends (pipelined).
    const inflight: Promise<unknown>[] = [sendNow(conn, "BEGIN")];
    // Cluster nodes (issue 30): one batch at a time over all nodes. Two nodes' batches took the
    // counter and quota rows of their ops in different orders and deadlocked (506 in a 3-node
    // benchmark); pipelined, so it costs no round trip of its own.
    if (this.#ctx.cluster) inflight.push(sendNow(conn, SQL_CLUSTER_BATCH_LOCK));
    const settled: Settled[] = [];
    const sealed: (() => Promise<void>)[] = [];
    for (const item of batch) {
      const op = Object.hasOwn(this.#ops, item.op)
        ? this.#ops[item.op] as PgOp<unknown, unknown>
        : undefined;
      if (op === undefined) {
        settled.push({
          ok: false,
          error: fromWireError({ message: `Unknown op ${item.op}` }, item.op),
        });
        continue;
      }
      const tx = new OpTx(conn, this.#ctx, { pipelined });
      if (!pipelined) {
        settled.push(await this.#runInSavepoint(conn, tx, op, item, inflight));
        continue;
      }
      // The op's statements up to its first await go out now, behind the earlier ops'.
      let running: Promise<unknown>;
      try {
        running = op(tx, item.args, item.now);
      } catch (err) {
        running = Promise.reject(err);
      }
      running.catch(() => {}); // settled below
      if (tx.sealed) {
        // No more statements will come from it: the next op need not wait for its answers.
        const at = settled.push(NOT_YET) - 1;
        sealed.push(async () => {
          settled[at] = await this.#settlePipelined(tx, running, item, inflight);
        });
      } else {
        settled.push(await this.#settlePipelined(tx, running, item, inflight));
      }
    }
    for (const settle of sealed) await settle();
    if (pipelined) {
      const failed = (await Promise.allSettled(inflight)).find((r) => r.status === "rejected");
      if (failed !== undefined) throw runAgain((failed as PromiseRejectedResult).reason);
    } else {
      await Promise.all(inflight);
    }
    const commit = await query(conn, "COMMIT");
    // COMMIT of an aborted transaction answers ROLLBACK instead of failing.
    if (commit.command !== undefined && commit.command !== "COMMIT") {
      throw new Error(`COMMIT answered ${commit.command}`);
    }
    return settled;
  }

  /** The answer of one op of a pipelined attempt (see `#attempt`). */
  async #settlePipelined(
    tx: OpTx,
    running: Promise<unknown>,
    item: Queued,
    inflight: Promise<unknown>[],
  ): Promise<Settled> {
    try {
      const value = await running;
      tx.end();
      inflight.push(...tx.issued);
      return { ok: true, value };
    } catch (err) {
      tx.end();
      const failed = (await Promise.allSettled(tx.issued)).find((r) => r.status === "rejected");
      if (failed !== undefined) throw runAgain((failed as PromiseRejectedResult).reason);
      if (!(err instanceof OpError) || tx.dirty) throw runAgain(err);
      return { ok: false, error: fromWireError(toWireError(err), item.op) };
    }
  }

  /** One op of a one-at-a-time attempt, in its own savepoint (see `#attempt`). */
  async #runInSavepoint(
    conn: PgConnection,
    tx: OpTx,
    op: PgOp<unknown, unknown>,
    item: Queued,
    inflight: Promise<unknown>[],
  ): Promise<Settled> {
    const savepoint = sendNow(conn, "SAVEPOINT op");
    try {
      const value = await op(tx, item.args, item.now);
      await tx.settle();
      tx.end();
      await savepoint;
      // Pipelined with the next op's statements; its failure fails the batch.
      inflight.push(sendNow(conn, "RELEASE SAVEPOINT op"));
      return { ok: true, value };
    } catch (err) {
      tx.end();
      // The op's own statements answer first (its failed sends are its failure). A broken
      // connection or a lost transaction makes the others throw: the batch fails.
      await Promise.allSettled(tx.issued);
      await Promise.all([...inflight, savepoint]);
      await query(conn, "ROLLBACK TO SAVEPOINT op");
      inflight.push(sendNow(conn, "RELEASE SAVEPOINT op"));
      return { ok: false, error: fromWireError(toWireError(err), item.op) };
    }
  }

  #notify(info: CommitInfo): void {
    for (const fn of this.#listeners) {
      try {
        fn(info);
      } catch (err) {
        this.#log?.error("Commit listener failed", {
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}
