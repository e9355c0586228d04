// The documented commands as a user of a checkout runs them (issue 27): through `./nixmsg`, under
// the shipped permissions of server/deno_permissions.txt. Each failed under those permissions
// while the tests, run with --allow-all, passed.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { online, type TestClient } from "./helpers/client.ts";
import { PW } from "./helpers/messaging.ts";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { seedEndpoints } from "./helpers/store_seed.ts";
import { TEST_POOL_PARAMS } from "./helpers/test_server.ts";
import { dbPath, ensureDataDir } from "../server/app/paths.ts";
import { PasswordPool } from "../server/auth/password_pool.ts";
import { HAS_OPENSSL, makeCert } from "../server/net/_test_util.ts";
import { openDb } from "../server/store/db.ts";
import { currentVersion, migrate, MIGRATIONS, SCHEMA_VERSION } from "../server/store/migrations.ts";
import { configure, resetOpsContext } from "../server/store/ops/context.ts";
import { submitMessage } from "../server/store/ops/messages.ts";
import { setSetting } from "../server/store/ops/settings.ts";
import { binaryArgs } from "../server/store/ops/_testing.ts";

const LAUNCHER = { launcher: true };

/** A single value of a one-row PRAGMA or query. */
function scalar(db: DatabaseSync, sql: string): unknown {
  return Object.values(db.prepare(sql).get() as Record<string, unknown>)[0];
}

Deno.test("./nixmsg backup --out FILE copies the database of a running server", async () => {
  const home = await makeTestHome();
  try {
    const init = await runCli(home, ["admin", "init"], undefined, LAUNCHER);
    assert.equal(init.code, 0, init.stderr);
    const server = await startServerProcess(home, 60_000, LAUNCHER);
    try {
      const out = join(home.dir, "copy.db");
      const res = await runCli(home, ["backup", "--out", out], undefined, LAUNCHER);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /Backup written to /);
      const copy = new DatabaseSync(out, { readOnly: true });
      try {
        assert.equal(scalar(copy, "PRAGMA integrity_check"), "ok");
        assert.equal(scalar(copy, "PRAGMA journal_mode"), "delete");
        assert.equal(currentVersion(copy), SCHEMA_VERSION);
        const hash = scalar(
          copy,
          "SELECT value FROM settings WHERE key = 'admin_password_hash'",
        ) as string;
        assert.match(hash, /^\$argon2id\$/);
      } finally {
        copy.close();
      }
      const again = await runCli(home, ["backup", "--out", out], undefined, LAUNCHER);
      assert.equal(again.code, 1, "an existing file is not overwritten");
      assert.match(again.stderr, /already exists/);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
  }
});

Deno.test({
  name:
    "./nixmsg serve under ulimit -n 1024 logs that limit and derives the connection caps from it",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const home = await makeTestHome();
    try {
      assert.equal((await runCli(home, ["admin", "init"], undefined, LAUNCHER)).code, 0);
      const server = await startServerProcess(home, 60_000, {
        ...LAUNCHER,
        // `ulimit -n` sets the soft and the hard limit: Deno cannot raise it past 1024.
        wrap: ["bash", "-c", 'ulimit -n 1024 && exec "$0" "$@"'],
      });
      try {
        const caps = server.logs.find((l) => l.msg === "Connection caps");
        // 1024 less max(64, 1024 / 10) of headroom; a quarter of that per address.
        assert.deepEqual(
          {
            open_files_limit: caps?.open_files_limit,
            max_connections: caps?.max_connections,
            max_connections_per_ip: caps?.max_connections_per_ip,
          },
          { open_files_limit: 1024, max_connections: 922, max_connections_per_ip: 230 },
        );
        const unread = server.logs.filter((l) => String(l.msg).startsWith("Cannot read the open"));
        assert.deepEqual(unread, []);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await home.cleanup();
    }
  },
});

Deno.test({
  name: "./nixmsg healthcheck succeeds against a TLS-only server and fails once it stops",
  ignore: !HAS_OPENSSL,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-tls-cert-" });
    const cert = await makeCert(dir, "localhost");
    const home = await makeTestHome({
      tls: { cert_file: cert.certFile, key_file: cert.keyFile, allow_plaintext: false },
    });
    try {
      assert.equal((await runCli(home, ["admin", "init"], undefined, LAUNCHER)).code, 0);
      const server = await startServerProcess(home, 60_000, LAUNCHER);
      try {
        const health = await runCli(home, ["healthcheck"], undefined, LAUNCHER);
        assert.equal(health.code, 0, health.stdout + health.stderr);
      } finally {
        assert.equal(await server.stop(), 0);
      }
      const down = await runCli(home, ["healthcheck"], undefined, LAUNCHER);
      assert.equal(down.code, 1, "nothing listens any more");
    } finally {
      await home.cleanup();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * A database file of schema version 1 written by the build of commit 5b90552 (the last before
 * migration 2) with that build's own ops: endpoints a and b (login password PW, hashed with the
 * test parameters), an admin password hash, and kept messages p1, p2, p3 from a pending for b
 * (kept for 10 years from 2026-12-01).
 */
const SCHEMA_1_FIXTURE = new URL("./fixtures/nixmsg-schema-1.db", import.meta.url).pathname;

/** Writes at `path` a database of schema `oldVersion` with today's ops; resolves `oldVersion`. */
async function seedWithTodaysOps(path: string, backupDir: string, oldVersion: number) {
  const previous = MIGRATIONS.filter((m) => m.version <= oldVersion);
  assert.ok(previous.length > 0 && oldVersion < SCHEMA_VERSION);
  await migrate(path, { backupDir, migrations: previous });
  const now = Date.now();
  const loginHash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(PW);
  const old = openDb(path);
  try {
    // Today's ops write the tables these rows touch as the old builds did (endpoints, messages,
    // bodies, deliveries, settings). Before migration 4 there are no quota counters: no quota, as
    // a build without them had. A migration that reshapes one of these tables needs rows written
    // in its old shape, which SCHEMA_1_FIXTURE has for version 1.
    seedEndpoints(old, ["a", "b"], loginHash, now);
    resetOpsContext();
    configure(old, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, now);
    setSetting(old, { key: "admin_password_hash", value: "$argon2id$test-only" }, now);
    for (const id of ["p1", "p2", "p3"]) {
      submitMessage(old, binaryArgs(id, { sendAt: now, keep: true, ttlSeconds: 3600 }), now);
    }
    assert.equal(currentVersion(old), oldVersion);
  } finally {
    old.close();
  }
  return oldVersion;
}

/**
 * Lays out an old database with `seed` (endpoints a and b, three kept messages pending for b;
 * resolves its schema version), starts `./nixmsg serve` on it and checks the pre-migration
 * backup, the schema and the delivery of what was pending.
 */
async function upgradeThroughLauncher(
  seed: (path: string, backupDir: string) => Promise<number>,
): Promise<void> {
  const home = await makeTestHome();
  const clients: TestClient[] = [];
  try {
    await ensureDataDir(home.dataDir);
    const path = dbPath(home.dataDir);
    const oldVersion = await seed(path, join(home.dataDir, "backup"));

    const server = await startServerProcess(home, 60_000, LAUNCHER);
    try {
      const backups = readdirSync(join(home.dataDir, "backup")).filter((f) =>
        /^pre-migrate-\d{8}T\d{6}Z(-\d+)?\.db$/.test(f)
      );
      assert.equal(backups.length, 1, `backups: ${backups.join(", ")}`);
      const copy = new DatabaseSync(join(home.dataDir, "backup", backups[0]), { readOnly: true });
      try {
        assert.equal(scalar(copy, "PRAGMA integrity_check"), "ok");
        assert.equal(currentVersion(copy), oldVersion, "the copy is the database as it was");
        assert.equal(scalar(copy, "SELECT count(*) FROM deliveries WHERE state = 'pending'"), 3);
      } finally {
        copy.close();
      }
      const now = new DatabaseSync(path, { readOnly: true });
      try {
        assert.equal(currentVersion(now), SCHEMA_VERSION);
      } finally {
        now.close();
      }

      const url = `ws://${server.addr}/mqtt`;
      const b = (await online(url, "b", PW)).client;
      clients.push(b);
      const ids = new Set<unknown>();
      for (const id of ["p1", "p2", "p3"]) {
        const m = await b.waitFrame((f) => f.type === "msg" && f.id === id, `${id} after upgrade`);
        assert.equal(m.from, "a");
        ids.add(m.id);
      }
      assert.equal(ids.size, 3, "every pending message is delivered");
    } finally {
      for (const c of clients) await c.close();
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
  }
}

Deno.test("./nixmsg serve upgrades a database of the previous schema, backs it up first and delivers what was pending", async () => {
  await upgradeThroughLauncher((path, backupDir) =>
    seedWithTodaysOps(path, backupDir, SCHEMA_VERSION - 1)
  );
});

Deno.test("./nixmsg serve upgrades a version-1 database through every migration, backs it up first and delivers what was pending", async () => {
  await upgradeThroughLauncher((path, backupDir) => seedWithTodaysOps(path, backupDir, 1));
});

Deno.test("./nixmsg serve upgrades the database a version-1 build wrote, backs it up first and delivers what was pending", async () => {
  await upgradeThroughLauncher(async (path) => {
    await Deno.copyFile(SCHEMA_1_FIXTURE, path);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      assert.equal(currentVersion(db), 1);
      return 1;
    } finally {
      db.close();
    }
  });
});
