// Test fixtures for the PostgreSQL store: a fresh schema per test on the test PostgreSQL that
// tests/run.sh starts (scripts/test_postgres.sh). Not a test file itself.
import { newPgOpsContext, type PgOpsContext } from "./op.ts";
import { migratePostgres } from "./migrations.ts";
import { connectPostgres, execScript, type PgPool } from "./sql.ts";

/** The test PostgreSQL's URL, or undefined when none was started. */
export const PG_TEST_URL: string | undefined = Deno.env.get("NIXMSG_TEST_POSTGRES_URL") ||
  undefined;

/** Why the PostgreSQL tests are ignored, or null when they run. */
export const PG_SKIP_REASON: string | null = PG_TEST_URL === undefined
  ? "NIXMSG_TEST_POSTGRES_URL is unset: PostgreSQL tests skipped (tests/run.sh starts one)"
  : null;

let warned = false;

/** `ignore` for `Deno.test`: true without a test PostgreSQL, saying so once. */
export function pgIgnored(): boolean {
  if (PG_SKIP_REASON !== null && !warned) {
    warned = true;
    console.warn(PG_SKIP_REASON);
  }
  return PG_SKIP_REASON !== null;
}

let counter = 0;

/** A migrated schema of its own and a pool that works in it; `drop` removes both. */
export interface PgTestDb {
  url: string;
  schema: string;
  sql: PgPool;
  ctx: PgOpsContext;
  drop(): Promise<void>;
}

/** Creates `nixmsg_test_<pid>_<n>`, migrated, with a pool whose search_path is that schema. */
export async function pgTestDb(opts: { migrate?: boolean } = {}): Promise<PgTestDb> {
  const url = PG_TEST_URL;
  if (url === undefined) throw new Error(PG_SKIP_REASON ?? "no test PostgreSQL");
  const schema = `nixmsg_test_${Deno.pid}_${++counter}_${crypto.randomUUID().slice(0, 8)}`;
  const admin = connectPostgres({ url, max: 1 });
  await execScript(admin, `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await admin.end();
  const sql = connectPostgres({ url, schema, max: 4 });
  if (opts.migrate !== false) await migratePostgres(sql, { url, schema });
  return {
    url,
    schema,
    sql,
    ctx: newPgOpsContext(),
    async drop() {
      await sql.end({ timeout: 5 });
      const again = connectPostgres({ url, max: 1 });
      await execScript(again, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await again.end();
    },
  };
}
