// Store faults for tests, injected from outside the server through the database itself, so the
// server's real writer and reader meet real store errors (spec 13 服务器故障). On SQLite through
// the database file, on PostgreSQL through the test server's own database (issue 29).
import { openDb } from "../../server/store/db.ts";
import { dbPath } from "../../server/app/paths.ts";
import { connectPostgres, execScript } from "../../server/store/postgres/sql.ts";
import type { TestServer } from "./test_server.ts";

/** The error every write gets while a {@linkcode WriteFault} is on; SQLITE_FULL's own text. */
export const FAULT_MESSAGE = "database or disk is full";

/** Where a fault is injected: a test server's store. */
export type FaultTarget = Pick<TestServer, "dataDir" | "storeKind" | "config">;

/** A write that fails: `event` on `table`, only for rows matching `when` (SQL on `NEW`) if given. */
export interface FaultRule {
  table: string;
  event: "INSERT" | "UPDATE" | "DELETE";
  when?: string;
}

const PG_FAULT_FUNCTION = "test_fault_raise";

/**
 * Makes writes matching `rules` fail the whole transaction, as a full disk does, until `off()`.
 *
 * On SQLite a trigger raises `RAISE(ROLLBACK)`: SQLite aborts the whole transaction, exactly as it
 * does on SQLITE_FULL, so the writer's batch fails and each of its ops gets `busy`. On PostgreSQL
 * a deferred constraint trigger raises `disk_full` (53100) at COMMIT, so there too the batch's
 * commit fails and not just the one op (the PostgreSQL writer rolls a failing op back alone). A
 * batch that writes nothing (an empty expiry sweep) still commits on both, as on a full disk.
 */
export class WriteFault {
  #target: FaultTarget;
  #names: { table: string; name: string }[] = [];

  private constructor(target: FaultTarget) {
    this.#target = target;
  }

  /** Turns the fault on for every write to every table of `target`'s store. */
  static async on(target: FaultTarget): Promise<WriteFault> {
    const tables = await tableNames(target);
    const rules: FaultRule[] = [];
    for (const table of tables) {
      for (const event of ["INSERT", "UPDATE", "DELETE"] as const) rules.push({ table, event });
    }
    return await WriteFault.rules(target, rules);
  }

  /** Turns the fault on for the writes of `rules` only. */
  static async rules(target: FaultTarget, rules: readonly FaultRule[]): Promise<WriteFault> {
    const fault = new WriteFault(target);
    const names = rules.map((r, i) => ({
      table: r.table,
      name: `test_fault_${r.table}_${r.event.toLowerCase()}_${i}`,
    }));
    if (target.storeKind === "sqlite") {
      const db = openDb(dbPath(target.dataDir));
      try {
        db.exec("BEGIN IMMEDIATE");
        rules.forEach((r, i) => {
          const when = r.when === undefined ? "" : ` WHEN ${r.when}`;
          db.exec(
            `CREATE TRIGGER ${names[i].name} BEFORE ${r.event} ON ${r.table}${when}
             BEGIN SELECT RAISE(ROLLBACK, '${FAULT_MESSAGE}'); END`,
          );
        });
        db.exec("COMMIT");
      } finally {
        db.close();
      }
    } else {
      const statements = [
        `CREATE OR REPLACE FUNCTION ${PG_FAULT_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN RAISE EXCEPTION '${FAULT_MESSAGE}' USING ERRCODE = 'disk_full'; END $$`,
        ...rules.map((r, i) => {
          // DELETE has no NEW row; its rules use OLD.
          const when = r.when === undefined ? "" : ` WHEN (${r.when})`;
          return `CREATE CONSTRAINT TRIGGER ${names[i].name} AFTER ${r.event} ON ${r.table}
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW${when}
            EXECUTE FUNCTION ${PG_FAULT_FUNCTION}()`;
        }),
      ];
      await pgScript(target, `BEGIN; ${statements.join(";\n")}; COMMIT`);
    }
    fault.#names = names;
    return fault;
  }

  /** Turns the fault off: writes succeed again. */
  async off(): Promise<void> {
    if (this.#names.length === 0) return;
    const names = this.#names;
    this.#names = [];
    if (this.#target.storeKind === "sqlite") {
      const db = openDb(dbPath(this.#target.dataDir));
      try {
        db.exec("BEGIN IMMEDIATE");
        for (const { name } of names) db.exec(`DROP TRIGGER IF EXISTS ${name}`);
        db.exec("COMMIT");
      } finally {
        db.close();
      }
    } else {
      const drops = names.map(({ table, name }) => `DROP TRIGGER IF EXISTS ${name} ON ${table}`);
      await pgScript(this.#target, `BEGIN; ${drops.join(";\n")}; COMMIT`);
    }
  }
}

async function tableNames(target: FaultTarget): Promise<string[]> {
  if (target.storeKind === "sqlite") {
    const db = openDb(dbPath(target.dataDir), { readOnly: true });
    try {
      const rows = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
      ).all() as { name: string }[];
      return rows.map((r) => r.name);
    } finally {
      db.close();
    }
  }
  const sql = connectPostgres({ url: target.config.store.postgres_url, max: 1 });
  try {
    const rows = await sql.unsafe(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`,
    ) as unknown as { name: string }[];
    return rows.map((r) => r.name);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Runs the trigger DDL in one transaction. CREATE/DROP TRIGGER lock each table in turn while the
 * server's batches hold row locks, so PostgreSQL may pick this session as a deadlock victim
 * (40P01): then the whole script ran not at all and is tried again.
 */
async function pgScript(target: FaultTarget, text: string): Promise<void> {
  const sql = connectPostgres({ url: target.config.store.postgres_url, max: 1 });
  try {
    for (let attempt = 1;; attempt++) {
      try {
        await execScript(sql, text);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== "40P01" || attempt >= 10) throw err;
        await execScript(sql, "ROLLBACK").catch(() => {});
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}
