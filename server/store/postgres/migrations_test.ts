import assert from "node:assert/strict";
import { MigrationError } from "../migrations.ts";
import { migratePostgres, PG_MIGRATIONS, PG_SCHEMA_VERSION, pgDumpCommand } from "./migrations.ts";
import { pgIgnored, pgTestDb } from "./_testing.ts";
import { query } from "./sql.ts";

Deno.test({
  name: "migratePostgres creates every table on an empty schema and records each version",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb({ migrate: false });
    try {
      const r = await migratePostgres(db.sql, { url: db.url, schema: db.schema, now: 5 });
      assert.deepEqual(r, { from: 0, to: PG_SCHEMA_VERSION, backupHint: null });
      const versions = await query<{ version: number; applied_at: number }>(
        db.sql,
        "SELECT version, applied_at FROM schema_migrations ORDER BY version",
      );
      assert.deepEqual(versions.map((v) => v.version), PG_MIGRATIONS.map((m) => m.version));
      assert(versions.every((v) => v.applied_at === 5));
      const tables = await query<{ table_name: string }>(
        db.sql,
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1
          ORDER BY table_name`,
        [db.schema],
      );
      assert.deepEqual(tables.map((t) => t.table_name), [
        "admin_sessions",
        "api_tokens",
        "audit_log",
        "deliveries",
        "endpoints",
        "failure_counters",
        "group_members",
        "groups",
        "id_counters",
        "message_bodies",
        "messages",
        "nodes",
        "quota_counts",
        "receipts",
        "schema_migrations",
        "send_keys",
        "settings",
        "talk_grants",
        "webhooks",
      ]);
      // A second run has nothing to do.
      assert.deepEqual(await migratePostgres(db.sql, { url: db.url, schema: db.schema }), {
        from: PG_SCHEMA_VERSION,
        to: PG_SCHEMA_VERSION,
        backupHint: null,
      });
    } finally {
      await db.drop();
    }
  },
});

Deno.test({
  name: "migratePostgres refuses a database newer than this build",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    try {
      await query(db.sql, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)");
      await assert.rejects(
        () => migratePostgres(db.sql, { url: db.url, schema: db.schema }),
        (err) => err instanceof MigrationError && /newer than this build/.test(err.message),
      );
    } finally {
      await db.drop();
    }
  },
});

Deno.test({
  name: "migratePostgres names the pg_dump backup before upgrading a database in use",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb();
    const warnings: string[] = [];
    const log = {
      warn: (msg: string, f?: Record<string, unknown>) => warnings.push(`${msg} ${f?.command}`),
      info: () => {},
    } as unknown as Parameters<typeof migratePostgres>[1]["log"];
    const next = [...PG_MIGRATIONS, {
      version: PG_SCHEMA_VERSION + 1,
      name: "test column",
      sql: "ALTER TABLE settings ADD COLUMN note TEXT",
    }];
    try {
      const r = await migratePostgres(db.sql, {
        url: db.url,
        schema: db.schema,
        migrations: next,
        now: Date.UTC(2026, 11, 3, 12, 0, 0),
        log,
      });
      assert.deepEqual(r.from, PG_SCHEMA_VERSION);
      assert.deepEqual(r.to, PG_SCHEMA_VERSION + 1);
      assert.match(r.backupHint ?? "", /^pg_dump --format=custom --schema='nixmsg_test_/);
      assert.match(r.backupHint ?? "", /--file=nixmsg-pre-migrate-20261203T120000Z\.dump/);
      assert.deepEqual(warnings.length, 1);
      const password = new URL(db.url).password;
      assert(password !== "" && !warnings[0].includes(password), "the password is never logged");
    } finally {
      await db.drop();
    }
  },
});

Deno.test({
  name: "a failed migration leaves the database as it was",
  ignore: pgIgnored(),
  fn: async () => {
    const db = await pgTestDb({ migrate: false });
    const broken = [...PG_MIGRATIONS, { version: 99, name: "broken", sql: "SELEC nothing" }];
    try {
      await assert.rejects(
        () => migratePostgres(db.sql, { url: db.url, schema: db.schema, migrations: broken }),
        (err) => err instanceof MigrationError && err.message.startsWith("Migration 99 (broken)"),
      );
      const tables = await query(
        db.sql,
        "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'endpoints'",
        [db.schema],
      );
      assert.deepEqual(tables.length, 0);
    } finally {
      await db.drop();
    }
  },
});

Deno.test("pgDumpCommand never contains the password", () => {
  const cmd = pgDumpCommand("postgres://nix:s3cret@db.example:5433/nixmsg", undefined, 0);
  assert.deepEqual(
    cmd,
    "pg_dump --format=custom --file=nixmsg-pre-migrate-19700101T000000Z.dump 'postgres://nix@db.example:5433/nixmsg'",
  );
});
