import { redactUrl } from "../../config/config.ts";
import type { Logger } from "../../log/log.ts";
import { backupTimestamp, type Migration, MigrationError } from "../migrations.ts";
import { PG_SCHEMA_V1_SQL } from "./schema_v1.ts";
import { execScript, type PgPool, query } from "./sql.ts";

// PostgreSQL's own numbered migrations (spec 7.7: embedded, ordered SQL plus schema_migrations).
// They are not the SQLite ones: migration 1 is the SQLite schema as of its migration 5.

// Migration 2 (issue 30): node leases, as SQLite's migration 7.
const PG_SCHEMA_V2_SQL = `
CREATE TABLE nodes (
  node_id TEXT COLLATE "C" PRIMARY KEY,
  address TEXT COLLATE "C" NOT NULL,
  version TEXT COLLATE "C" NOT NULL,
  started_at BIGINT NOT NULL,
  lease_until BIGINT NOT NULL,
  renewed_at BIGINT NOT NULL
);
`;

/** Every PostgreSQL migration of this build, oldest first. Append; never edit a released one. */
export const PG_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial schema (SQLite schema 5)", sql: PG_SCHEMA_V1_SQL },
  { version: 2, name: "node leases (SQLite schema 7)", sql: PG_SCHEMA_V2_SQL },
];

/** The PostgreSQL schema version this build expects. */
export const PG_SCHEMA_VERSION: number = PG_MIGRATIONS[PG_MIGRATIONS.length - 1].version;

/** Options of {@link migratePostgres}. */
export interface PgMigrateOptions {
  /** The store's URL, for the pg_dump line (its password is never printed). */
  url: string;
  /** The schema the tables live in, when not the default search_path. */
  schema?: string;
  now?: number;
  /** Replaces {@link PG_MIGRATIONS}; for tests. */
  migrations?: readonly Migration[];
  log?: Logger;
}

/** What {@link migratePostgres} did. */
export interface PgMigrateResult {
  from: number;
  to: number;
  /**
   * The pg_dump command the operator should have run before this upgrade; null for a new
   * database or when nothing was pending. The store cannot copy a file (spec 7.7 pre-migrate
   * backup): PostgreSQL's data is backed up with pg_dump or the operator's own tooling.
   */
  backupHint: string | null;
}

// Several servers may start at once against one database: one of them migrates.
const SQL_LOCK = "SELECT pg_advisory_xact_lock(7269826383)";
const SQL_CREATE_VERSIONS = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  applied_at BIGINT NOT NULL
)`;
const SQL_CURRENT_VERSION =
  "SELECT coalesce(max(version), 0)::int AS version FROM schema_migrations";
const SQL_INSERT_VERSION = "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)";

/**
 * Brings the PostgreSQL database up to the newest version, all pending migrations in one
 * transaction (PostgreSQL DDL is transactional), so a failure changes nothing. A database newer
 * than this build is refused. Before upgrading a database in use it logs how to back it up.
 *
 * @throws {MigrationError} when the database is too new or a migration fails.
 */
export async function migratePostgres(
  sql: PgPool,
  opts: PgMigrateOptions,
): Promise<PgMigrateResult> {
  const migrations = opts.migrations ?? PG_MIGRATIONS;
  const target = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version;
  const now = opts.now ?? Date.now();
  const conn = await sql.reserve();
  let current: Migration | undefined;
  try {
    await execScript(conn, "BEGIN");
    // Another server's migration may take longer than the store's lock_timeout: wait for it.
    await execScript(conn, "SET LOCAL lock_timeout = 0");
    await query(conn, SQL_LOCK);
    await execScript(conn, SQL_CREATE_VERSIONS);
    const from = (await query<{ version: number }>(conn, SQL_CURRENT_VERSION))[0].version;
    if (from > target) {
      throw new MigrationError(
        `Database schema version ${from} is newer than this build supports (${target})`,
      );
    }
    const pending = migrations.filter((m) => m.version > from);
    if (pending.length === 0) {
      await execScript(conn, "COMMIT");
      return { from, to: from, backupHint: null };
    }
    const backupHint = from === 0 ? null : pgDumpCommand(opts.url, opts.schema, now);
    if (backupHint !== null) {
      opts.log?.warn("PostgreSQL schema upgrade: back the database up first", {
        from,
        to: target,
        command: backupHint,
      });
    }
    for (const m of pending) {
      current = m;
      await execScript(conn, m.sql);
      await query(conn, SQL_INSERT_VERSION, [m.version, now]);
    }
    current = undefined;
    await execScript(conn, "COMMIT");
    opts.log?.info("Database migrated", { from, to: target });
    return { from, to: target, backupHint };
  } catch (err) {
    await execScript(conn, "ROLLBACK").catch(() => {});
    if (err instanceof MigrationError) throw err;
    const what = current === undefined ? "Migration" : `Migration ${current.version}`;
    const name = current === undefined ? "" : ` (${current.name})`;
    const message = err instanceof Error ? err.message : String(err);
    throw new MigrationError(`${what}${name} failed: ${message}`, { cause: err });
  } finally {
    conn.release();
  }
}

/** The pg_dump line for a pre-migration backup; the password is left to PGPASSWORD/.pgpass. */
export function pgDumpCommand(url: string, schema: string | undefined, now: number): string {
  let target = redactUrl(url);
  try {
    const u = new URL(url);
    u.password = "";
    for (const key of [...u.searchParams.keys()]) {
      if (key.toLowerCase() === "password") u.searchParams.delete(key);
    }
    target = u.toString();
  } catch {
    // keep the redacted form
  }
  const only = schema === undefined ? "" : ` --schema='${schema}'`;
  return `pg_dump --format=custom${only} --file=nixmsg-pre-migrate-${
    backupTimestamp(now)
  }.dump '${target}'`;
}
