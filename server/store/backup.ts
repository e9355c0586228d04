import { existsSync } from "node:fs";
import { openDb } from "./db.ts";

const SQL_VACUUM_INTO = "VACUUM INTO ?";

/**
 * Writes a consistent copy of the database at `dbPath` to `outFile` with `VACUUM INTO`.
 *
 * It uses its own read-only connection, so it is safe while a server is writing: in WAL mode
 * the copy is one committed snapshot and the writer is never blocked. The copy is a plain
 * (rollback-journal) database file that opens on its own.
 *
 * @throws {Error} when `outFile` already exists or `dbPath` cannot be opened.
 * @example
 * ```ts
 * backupDatabase("data/nixmsg.db", "/backups/nixmsg-2026-11-29.db");
 * ```
 */
export function backupDatabase(dbPath: string, outFile: string): void {
  // VACUUM INTO refuses an existing file too, but only after opening; say why up front.
  if (existsSync(outFile)) throw new Error(`Backup file already exists: ${outFile}`);
  if (!existsSync(dbPath)) throw new Error(`Database file not found: ${dbPath}`);
  const db = openDb(dbPath, { readOnly: true });
  try {
    db.prepare(SQL_VACUUM_INTO).run(outFile);
  } finally {
    db.close();
  }
}
