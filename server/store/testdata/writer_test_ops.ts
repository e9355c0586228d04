// Ops for the writer tests, loaded into the Worker through `opsModule`.
import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import { settingsOps } from "../ops/settings.ts";

const SQL_PUT = "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)";
const SQL_COUNT_PREFIX = "SELECT count(*) AS n FROM settings WHERE key LIKE ? || '%'";
// deliveries.seq references messages(seq); with deferred checks the violation surfaces at COMMIT.
const SQL_ORPHAN_DELIVERY = `INSERT INTO deliveries (seq, endpoint_id, send_at, keep, state,
  updated_at) VALUES (424242, 'nobody', 0, 0, 'pending', 0)`;

function put(db: DatabaseSync, a: { key: string; value?: string }, now: number): { key: string } {
  prepareCached(db, SQL_PUT).run(a.key, a.value ?? "v", now);
  return { key: a.key };
}

/** Writes its row, then fails with an OpError: only its own savepoint rolls back. */
function putThenConflict(db: DatabaseSync, a: { key: string }, now: number): never {
  put(db, a, now);
  throw new OpError("conflict", { key: a.key, n: 1 }, "Key is taken");
}

/** Writes its row, then fails with a plain Error: becomes busy on the main thread. */
function putThenCrash(db: DatabaseSync, a: { key: string }, now: number): never {
  put(db, a, now);
  throw new Error(`Boom ${a.key}`);
}

/** Counts the rows with `prefix` before adding its own: the count is its position in the queue. */
function append(db: DatabaseSync, a: { prefix: string; i: number }, now: number): number {
  const before = (prepareCached(db, SQL_COUNT_PREFIX).get(a.prefix) as { n: number }).n;
  put(db, { key: `${a.prefix}${String(a.i).padStart(6, "0")}` }, now);
  return before;
}

/** Defers foreign keys and breaks one, so that this batch's COMMIT fails. */
function breakCommit(db: DatabaseSync, _a: Record<string, never>, _now: number): string {
  db.exec("PRAGMA defer_foreign_keys = ON");
  db.exec(SQL_ORPHAN_DELIVERY);
  return "queued a broken row";
}

/** Holds the write transaction open for `ms`, as a slow op would, then writes its row. */
function slowPut(db: DatabaseSync, a: { key: string; ms: number }, now: number): { key: string } {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, a.ms);
  return put(db, a, now);
}

function echo<T>(_db: DatabaseSync, a: T, now: number): { args: T; now: number } {
  return { args: a, now };
}

function returnFunction(_db: DatabaseSync, _a: Record<string, never>, _now: number): () => void {
  return () => {};
}

export const ops = {
  ...settingsOps,
  "test.put": put,
  "test.put_then_conflict": putThenConflict,
  "test.put_then_crash": putThenCrash,
  "test.append": append,
  "test.break_commit": breakCommit,
  "test.slow_put": slowPut,
  "test.echo": echo<{ bytes: Uint8Array; list: number[] }>,
  "test.return_function": returnFunction,
};

export type TestOps = typeof ops;
