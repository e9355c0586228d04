import type { DatabaseSync } from "node:sqlite";
import { openDb } from "./db.ts";

/**
 * Opens a read-only connection for the main thread (spec 7.2: reads use their own
 * connection). In WAL mode it reads the last committed state and never blocks the writer.
 *
 * @example
 * ```ts
 * const reader = openReader("data/nixmsg.db");
 * reader.prepare("SELECT count(*) AS n FROM messages").get();
 * ```
 */
export function openReader(path: string): DatabaseSync {
  return openDb(path, { readOnly: true });
}
