import type { DatabaseSync, StatementSync } from "node:sqlite";
import { type OpRegistry, toWireError } from "./op.ts";
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
const SQL_TOTAL_CHANGES = "SELECT total_changes() AS n";

/**
 * An op that runs without a savepoint wrote and then threw: its writes cannot be undone alone,
 * so its whole batch is given up (every op answers `busy`) instead.
 */
class PartialOpError extends Error {
  constructor(name: string, cause: unknown) {
    super(
      `Op ${name} failed after writing, so its batch was rolled back: ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
    );
  }
}

/**
 * Runs batches of ops on the write connection: BEGIN IMMEDIATE, each op inside
 * `SAVEPOINT op … RELEASE op`, then COMMIT (spec 7.2). An op that throws is rolled back to its
 * savepoint alone; its batch mates still commit. Results are only returned after the COMMIT, so
 * nothing is answered before it is on disk.
 *
 * `unguarded` ops (the few that run for every message) skip the savepoint, which costs more than
 * some of them (issue 19). Such an op must only fail before its first write; the runner checks it
 * with SQLite's `total_changes()`: an op that failed without writing is reported alone, exactly
 * as a rollback to its savepoint would leave it, and one that failed after writing gives up its
 * whole batch (all `busy`, nothing committed).
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
  #totalChanges: StatementSync;
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
    this.#totalChanges = db.prepare(SQL_TOTAL_CHANGES);
  }

  /** Runs `items` in one transaction and reports how each settled. */
  run(items: readonly WireOp[]): BatchCommittedMessage | BatchFailedMessage {
    const started = performance.now();
    const results: WireResult[] = new Array(items.length);
    try {
      this.#begin.run();
      for (let i = 0; i < items.length; i++) results[i] = this.#runOne(items[i]);
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

  #runOne(item: WireOp): WireResult {
    const [id, name, args, now] = item;
    const op = Object.hasOwn(this.#ops, name) ? this.#ops[name] : undefined;
    if (op === undefined) return [id, false, { message: `Unknown op ${name}` }];
    if (this.#unguarded.has(name)) return this.#runUnguarded(item, op);
    this.#savepoint.run();
    try {
      const value = (op as (db: DatabaseSync, args: unknown, now: number) => unknown)(
        this.#db,
        args,
        now,
      );
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

  #runUnguarded([id, name, args, now]: WireOp, op: OpRegistry[string]): WireResult {
    const before = this.#changes();
    try {
      const value = (op as (db: DatabaseSync, args: unknown, now: number) => unknown)(
        this.#db,
        args,
        now,
      );
      return [id, true, value];
    } catch (err) {
      if (!this.#db.isTransaction) throw err;
      // A statement that failed undid its own changes; earlier ones of the op would stay.
      if (this.#changes() !== before) throw new PartialOpError(name, err);
      return [id, false, toWireError(err)];
    }
  }

  #changes(): number {
    return Number((this.#totalChanges.get() as { n: number | bigint }).n);
  }

  #abandon(): void {
    try {
      if (this.#db.isTransaction) this.#rollback.run();
    } catch {
      // The connection is unusable; the next BEGIN will fail and report it.
    }
  }
}
