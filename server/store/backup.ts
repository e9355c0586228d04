import { existsSync } from "node:fs";
import { backup, type DatabaseSync } from "node:sqlite";
import { openDb } from "./db.ts";

/**
 * Copies the open database `db` to the new file `outFile` with SQLite's online backup API, in one
 * step: the copy is one committed snapshot, and in WAL mode writers go on meanwhile. The copy is
 * then switched to a rollback journal, so it is one file that opens on its own.
 *
 * `VACUUM INTO` would need `ATTACH`, which Deno refuses without `--allow-all`; the backup API does
 * not (docs/operations.md, "Permissions").
 */
export async function copyDatabase(db: DatabaseSync, outFile: string): Promise<void> {
  await backup(db, outFile, { rate: -1 });
  const copy = openDb(outFile);
  try {
    copy.exec("PRAGMA journal_mode = DELETE");
  } finally {
    copy.close();
  }
}

/**
 * Writes a consistent copy of the database at `dbPath` to `outFile` ({@linkcode copyDatabase}).
 *
 * It uses its own read-only connection, so it is safe while a server is writing: the copy is one
 * committed snapshot and the writer is never blocked.
 *
 * @throws {Error} when `outFile` already exists or `dbPath` cannot be opened.
 * @example
 * ```ts
 * await backupDatabase("data/nixmsg.db", "/backups/nixmsg-2026-11-29.db");
 * ```
 */
export async function backupDatabase(dbPath: string, outFile: string): Promise<void> {
  // The backup API would overwrite an existing file: refuse it up front.
  if (existsSync(outFile)) throw new Error(`Backup file already exists: ${outFile}`);
  if (!existsSync(dbPath)) throw new Error(`Database file not found: ${dbPath}`);
  const db = openDb(dbPath, { readOnly: true });
  try {
    await copyDatabase(db, outFile);
  } finally {
    db.close();
  }
}
