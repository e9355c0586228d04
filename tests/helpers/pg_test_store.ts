// A PostgreSQL database of its own for one in-process or spawned test server (issue 29): created
// on the test PostgreSQL (NIXMSG_TEST_POSTGRES_URL, started by tests/run.sh), migrated, with the
// admin password pre-set like the SQLite test homes, and dropped at the end. Give `overrides` to
// `startTestServer` or `makeTestHome`.
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { PG_SKIP_REASON, PG_TEST_URL } from "../../server/store/postgres/_testing.ts";
import { connectPostgres, execScript } from "../../server/store/postgres/sql.ts";

/** A test database and the config keys that point a server at it. */
export interface PgTestStore {
  url: string;
  overrides: { store: { kind: "postgres"; postgres_url: string } };
  drop(): Promise<void>;
}

let counter = 0;
/** Tells apart the test files (workers) of one `deno test` process. */
const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 10);

/**
 * Creates `nixmsg_it_<pid>_<run>_<n>` with the schema migrated and an admin password set, or, with
 * `empty`, a database with nothing in it (a `store copy` target).
 */
export async function pgTestStore(opts: { empty?: boolean } = {}): Promise<PgTestStore> {
  if (PG_TEST_URL === undefined) throw new Error(PG_SKIP_REASON ?? "no test PostgreSQL");
  // `deno test --parallel` runs test files in workers of one process: the pid alone is shared.
  const name = `nixmsg_it_${Deno.pid}_${RUN}_${++counter}`;
  const admin = connectPostgres({ url: PG_TEST_URL, max: 1 });
  try {
    await execScript(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await execScript(admin, `CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(PG_TEST_URL);
  u.pathname = `/${name}`;
  const url = u.toString();
  if (!opts.empty) {
    const store = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2, poolSize: 1 });
    try {
      await store.run("settings.set", {
        key: "admin_password_hash",
        value: "$argon2id$test-only",
      });
    } finally {
      await store.close();
    }
  }
  return {
    url,
    overrides: { store: { kind: "postgres", postgres_url: url } },
    async drop() {
      const again = connectPostgres({ url: PG_TEST_URL!, max: 1 });
      try {
        await execScript(again, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}
