import { DatabaseSync, type StatementSync } from "node:sqlite";

/** How hard SQLite syncs a commit to disk (spec 7.7: FULL by default, NORMAL may lose seconds). */
export type Synchronous = "FULL" | "NORMAL";

/** Options of {@link openDb}. */
export interface OpenDbOptions {
  /** Default `FULL`: a commit is on disk before it is answered (spec 7.7). */
  synchronous?: Synchronous;
  /** Open without write access; the file must exist. Leaves the journal mode alone. */
  readOnly?: boolean;
}

/**
 * Opens a SQLite database with the pragmas of spec 7.7: WAL, busy_timeout 5000,
 * synchronous, foreign_keys and secure_delete.
 *
 * @example
 * ```ts
 * const db = openDb("data/nixmsg.db", { synchronous: "NORMAL" });
 * ```
 */
export function openDb(path: string, opts: OpenDbOptions = {}): DatabaseSync {
  const synchronous = opts.synchronous ?? "FULL";
  if (synchronous !== "FULL" && synchronous !== "NORMAL") {
    throw new Error(`Unknown synchronous mode ${String(synchronous)}`);
  }
  const readOnly = opts.readOnly ?? false;
  const db = new DatabaseSync(path, { readOnly });
  try {
    // busy_timeout first: switching to WAL may itself wait for another connection's lock.
    db.exec("PRAGMA busy_timeout = 5000");
    // A read-only connection cannot change the journal mode; the writer already set WAL.
    if (!readOnly) db.exec("PRAGMA journal_mode = WAL");
    db.exec(`PRAGMA synchronous = ${synchronous}`);
    db.exec("PRAGMA foreign_keys = ON");
    // spec 7.7: deleted bodies are overwritten, not just marked free.
    db.exec("PRAGMA secure_delete = ON");
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

const statementCaches = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

/**
 * Returns a prepared statement for `sql`, prepared once per connection and then reused.
 * Ops run thousands of times per second; preparing each time would cost more than the insert.
 *
 * @example
 * ```ts
 * prepareCached(db, "SELECT value FROM settings WHERE key = ?").get("registration_enabled");
 * ```
 */
export function prepareCached(db: DatabaseSync, sql: string): StatementSync {
  let cache = statementCaches.get(db);
  if (cache === undefined) {
    cache = new Map();
    statementCaches.set(db, cache);
  }
  let stmt = cache.get(sql);
  if (stmt === undefined) {
    stmt = db.prepare(sql);
    cache.set(sql, stmt);
  }
  return stmt;
}
