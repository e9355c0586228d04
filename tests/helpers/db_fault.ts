// Store faults for tests, injected from outside the server through the database file itself, so
// the server's real writer and reader meet real SQLite errors (spec 13 服务器故障).
import { openDb } from "../../server/store/db.ts";
import { dbPath } from "../../server/app/paths.ts";

/** The error every write gets while a {@linkcode WriteFault} is on; SQLITE_FULL's own text. */
export const FAULT_MESSAGE = "database or disk is full";

/**
 * Makes every write to the database fail, as with a full disk, until `off()`.
 *
 * A trigger on each table raises `RAISE(ROLLBACK)`: SQLite aborts the whole transaction, exactly
 * as it does on SQLITE_FULL, so the writer's batch fails and each of its ops gets `busy`. A batch
 * that writes nothing (an empty expiry sweep) still commits, as it does on a full disk.
 */
export class WriteFault {
  #dir: string;
  #names: string[] = [];

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Turns the fault on for the database in `dataDir`. */
  static on(dataDir: string): WriteFault {
    const fault = new WriteFault(dataDir);
    const db = openDb(dbPath(dataDir));
    try {
      const tables = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
      ).all() as { name: string }[];
      db.exec("BEGIN IMMEDIATE");
      for (const { name } of tables) {
        for (const event of ["INSERT", "UPDATE", "DELETE"]) {
          const trigger = `test_fault_${name}_${event.toLowerCase()}`;
          db.exec(
            `CREATE TRIGGER ${trigger} BEFORE ${event} ON ${name}
             BEGIN SELECT RAISE(ROLLBACK, '${FAULT_MESSAGE}'); END`,
          );
          fault.#names.push(trigger);
        }
      }
      db.exec("COMMIT");
    } finally {
      db.close();
    }
    return fault;
  }

  /** Turns the fault off: writes succeed again. */
  off(): void {
    if (this.#names.length === 0) return;
    const db = openDb(dbPath(this.#dir));
    try {
      db.exec("BEGIN IMMEDIATE");
      for (const name of this.#names) db.exec(`DROP TRIGGER IF EXISTS ${name}`);
      db.exec("COMMIT");
      this.#names = [];
    } finally {
      db.close();
    }
  }
}
