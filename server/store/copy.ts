import { existsSync } from "node:fs";
import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import { openDb } from "./db.ts";
import { migrate } from "./migrations.ts";
import { COPY_TABLES, type CopyTable, type CopyTarget, type CopyValue } from "./store.ts";

// `nixmsg store copy` (issue 29): a stopped SQLite database into an empty store, table by table
// in foreign-key order, in chunks, with a count check at the end.

const SQL_COLUMNS = "SELECT name FROM pragma_table_info(?) ORDER BY cid";
const SQL_COUNT = (t: CopyTable) => `SELECT count(*) AS n FROM ${t}`;
const SQL_CHUNK = (t: CopyTable, cols: readonly string[]) =>
  `SELECT rowid AS copy_rowid, ${cols.join(", ")} FROM ${t} WHERE rowid > ? ORDER BY rowid LIMIT ?`;
const SQL_INSERT = (t: CopyTable, cols: readonly string[]) =>
  `INSERT INTO ${t} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`;

/** Rows read and written per chunk. */
export const COPY_CHUNK = 2000;

/** Where the copy stands, reported after every chunk. */
export interface CopyProgress {
  table: CopyTable;
  done: number;
  total: number;
}

/** The counts compared at the end: equal for every table, or the copy failed. */
export interface CopyReport {
  tables: { table: CopyTable; source: number; target: number }[];
  equal: boolean;
}

/** Options of {@link copyStore}. */
export interface CopyOptions {
  chunk?: number;
  progress?: (p: CopyProgress) => void;
}

/** The target already holds rows: a copy only goes into an empty database. */
export class CopyTargetNotEmptyError extends Error {
  override name = "CopyTargetNotEmptyError";
}

function columnsOf(db: DatabaseSync, table: CopyTable): string[] {
  return (db.prepare(SQL_COLUMNS).all(table) as { name: string }[]).map((r) => r.name);
}

/**
 * Copies every table of {@link COPY_TABLES} from the SQLite file at `sourcePath` (migrated, not
 * served) into `target`, which must be empty, then compares the counts.
 *
 * @throws {CopyTargetNotEmptyError} when a table of the target has rows
 * @example
 * ```ts
 * const report = await copyStore("data/nixmsg.db", target, { progress: console.log });
 * ```
 */
export async function copyStore(
  sourcePath: string,
  target: CopyTarget,
  opts: CopyOptions = {},
): Promise<CopyReport> {
  const chunk = opts.chunk ?? COPY_CHUNK;
  for (const table of COPY_TABLES) {
    const n = await target.countRows(table);
    if (n > 0) {
      throw new CopyTargetNotEmptyError(`The target database is not empty: ${table} has ${n} rows`);
    }
  }
  const db = openDb(sourcePath, { readOnly: true });
  const source = new Map<CopyTable, number>();
  try {
    // One read transaction: every table is read from the same snapshot.
    db.exec("BEGIN");
    for (const table of COPY_TABLES) {
      const total = (db.prepare(SQL_COUNT(table)).get() as { n: number }).n;
      source.set(table, total);
      const cols = columnsOf(db, table);
      const read = db.prepare(SQL_CHUNK(table, cols));
      read.setReadBigInts(false);
      let after = 0;
      let done = 0;
      opts.progress?.({ table, done, total });
      for (;;) {
        const rows = read.all(after, chunk) as Record<string, CopyValue>[];
        if (rows.length === 0) break;
        await target.insertRows(table, cols, rows.map((r) => cols.map((c) => r[c])));
        after = Number(rows[rows.length - 1].copy_rowid);
        done += rows.length;
        opts.progress?.({ table, done, total });
        if (rows.length < chunk) break;
      }
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
  await target.finish();
  const tables = [];
  for (const table of COPY_TABLES) {
    tables.push({ table, source: source.get(table)!, target: await target.countRows(table) });
  }
  return { tables, equal: tables.every((t) => t.source === t.target) };
}

/**
 * A new SQLite file as a copy target: migrated to this build's schema, then filled. Its triggers
 * derive `quota_counts`, and AUTOINCREMENT continues above the copied `seq` and `receipt_id`.
 *
 * @throws {Error} when `path` already exists (the promise rejects)
 */
export async function sqliteCopyTarget(path: string, backupDir: string): Promise<CopyTarget> {
  if (existsSync(path)) throw new Error(`The target file already exists: ${path}`);
  await migrate(path, { backupDir });
  const db = openDb(path);
  return {
    countRows(table) {
      return Promise.resolve((db.prepare(SQL_COUNT(table)).get() as { n: number }).n);
    },
    insertRows(table, columns, rows) {
      const insert = db.prepare(SQL_INSERT(table, columns));
      db.exec("BEGIN IMMEDIATE");
      try {
        for (const row of rows) insert.run(...(row as SQLInputValue[]));
        db.exec("COMMIT");
      } catch (err) {
        db.exec("ROLLBACK");
        return Promise.reject(err);
      }
      return Promise.resolve();
    },
    finish() {
      const broken = db.prepare("PRAGMA foreign_key_check").all();
      if (broken.length > 0) {
        return Promise.reject(new Error(`Foreign key check failed: ${broken.length} rows`));
      }
      return Promise.resolve();
    },
    close() {
      db.close();
      return Promise.resolve();
    },
  };
}
