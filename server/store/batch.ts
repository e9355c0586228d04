import type { DatabaseSync, StatementSync } from "node:sqlite";
import { type OpRegistry, toWireError } from "./op.ts";
import { OpError } from "./op_error.ts";
import type {
  BatchCommittedMessage,
  BatchFailedMessage,
  WireOp,
  WireResult,
} from "./writer_protocol.ts";

// spec 7.2: one transaction per batch, one SAVEPOINT per op.
const SQL_BEGIN = "BEGIN IMMEDIATE";
const SQL_COMMIT = "COMMIT";
const SQL_ROLLBACK = "ROLLBACK";
const SQL_SAVEPOINT = "SAVEPOINT op";
const SQL_RELEASE = "RELEASE op";
const SQL_ROLLBACK_TO = "ROLLBACK TO op";

/** No op runs unguarded: the retry after an unguarded op threw. */
const NONE: ReadonlySet<string> = new Set();
/** An unguarded op failed unexpectedly: the batch is rolled back and run again, all guarded. */
const RETRY_GUARDED = Symbol("retry guarded");

/**
 * Runs batches of ops on the write connection: BEGIN IMMEDIATE, each op inside
 * `SAVEPOINT op … RELEASE op`, then COMMIT (spec 7.2). An op that throws is rolled back to its
 * savepoint alone; its batch mates still commit. Results are only returned after the COMMIT, so
 * nothing is answered before it is on disk.
 *
 * `unguarded` ops (the few that run for every message) skip the savepoint, which costs more than
 * some of them (issue 19). Their refusals are `OpError`s thrown by checks made before the op's
 * first write (`server/store/ops/unguarded_test.ts` proves it for every refusal), so such an
 * error is reported alone and the batch goes on. Any other error (a SQLite error, a bug) may come
 * after some writes that cannot be undone alone: the runner then rolls the whole transaction back
 * and runs the batch again from the start with every op in its own savepoint, and answers from
 * that run, exactly as if the op had been guarded from the beginning. A batch costs at most two
 * runs.
 */
export class BatchRunner {
  #db: DatabaseSync;
  #ops: OpRegistry;
  #begin: StatementSync;
  #commit: StatementSync;
  #rollback: StatementSync;
  #savepoint: StatementSync;
  #release: StatementSync;
  #rollbackTo: StatementSync;
  #unguarded: ReadonlySet<string>;

  constructor(db: DatabaseSync, ops: OpRegistry, unguarded: ReadonlySet<string> = new Set()) {
    this.#db = db;
    this.#ops = ops;
    this.#unguarded = unguarded;
    // Each SAVEPOINT keeps the original of every page it changes in a sub-journal. On the
    // default temp file that tripled the cost of a 3-row op; in memory it is a memcpy.
    db.exec("PRAGMA temp_store = MEMORY");
    // Checkpoints run beside the writer (checkpointer.ts). This large automatic limit is only a
    // safety net for a stalled checkpointer: it bounds the WAL at about 80 MiB.
    db.exec("PRAGMA wal_autocheckpoint = 20000");
    this.#begin = db.prepare(SQL_BEGIN);
    this.#commit = db.prepare(SQL_COMMIT);
    this.#rollback = db.prepare(SQL_ROLLBACK);
    this.#savepoint = db.prepare(SQL_SAVEPOINT);
    this.#release = db.prepare(SQL_RELEASE);
    this.#rollbackTo = db.prepare(SQL_ROLLBACK_TO);
  }

  /** Runs `items` in one transaction and reports how each settled. */
  run(items: readonly WireOp[]): BatchCommittedMessage | BatchFailedMessage {
    const started = performance.now();
    let results: WireResult[] | typeof RETRY_GUARDED;
    try {
      results = this.#attempt(items, this.#unguarded);
      if (results === RETRY_GUARDED) {
        this.#rollback.run();
        results = this.#attempt(items, NONE) as WireResult[];
      }
      this.#commit.run();
    } catch (err) {
      // BEGIN or COMMIT failed (disk full, deferred foreign key, lock), or SQLite dropped the
      // whole transaction under an op. Nothing of this batch is on disk, so nothing succeeds.
      this.#abandon();
      return {
        type: "batch",
        ok: false,
        ms: performance.now() - started,
        ids: items.map((item) => item[0]),
        error: err instanceof Error ? err.message : String(err),
      };
    }
    return { type: "batch", ok: true, ms: performance.now() - started, results };
  }

  /**
   * BEGIN and every op of `items`; RETRY_GUARDED as soon as an op of `unguarded` throws anything
   * but an `OpError`.
   */
  #attempt(
    items: readonly WireOp[],
    unguarded: ReadonlySet<string>,
  ): WireResult[] | typeof RETRY_GUARDED {
    this.#begin.run();
    const results: WireResult[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const [id, name, args, now] = items[i];
      const op = Object.hasOwn(this.#ops, name) ? this.#ops[name] : undefined;
      if (op === undefined) {
        results[i] = [id, false, { message: `Unknown op ${name}` }];
        continue;
      }
      const run = op as (db: DatabaseSync, args: unknown, now: number) => unknown;
      if (!unguarded.has(name)) {
        results[i] = this.#runGuarded(id, run, args, now);
        continue;
      }
      try {
        results[i] = [id, true, run(this.#db, args, now)];
      } catch (err) {
        // SQLite dropped the whole transaction (SQLITE_FULL, IOERR, NOMEM): the batch fails.
        if (!this.#db.isTransaction) throw err;
        if (!(err instanceof OpError)) return RETRY_GUARDED;
        results[i] = [id, false, toWireError(err)];
      }
    }
    return results;
  }

  #runGuarded(
    id: number,
    run: (db: DatabaseSync, args: unknown, now: number) => unknown,
    args: unknown,
    now: number,
  ): WireResult {
    this.#savepoint.run();
    try {
      const value = run(this.#db, args, now);
      this.#release.run();
      return [id, true, value];
    } catch (err) {
      // Some errors (SQLITE_FULL, IOERR, NOMEM) roll back the whole transaction; then the
      // savepoint is gone and ROLLBACK TO throws, failing the batch in run().
      if (!this.#db.isTransaction) throw err;
      this.#rollbackTo.run();
      this.#release.run();
      return [id, false, toWireError(err)];
    }
  }

  #abandon(): void {
    try {
      if (this.#db.isTransaction) this.#rollback.run();
    } catch {
      // The connection is unusable; the next BEGIN will fail and report it.
    }
  }
}
