import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { validateConfig } from "../config/config.ts";
import { Logger } from "../log/log.ts";
import { openSqliteStore } from "./sqlite_store.ts";
import { type PostgresStoreOptions, type Store, StoreUnreachableError } from "./store.ts";
import { backupRefusal, openStore, StoreOpenError } from "./store_factory.ts";

const URL_WITH_PASSWORD = "postgres://nixmsg:s3cret-pw@127.0.0.1:1/nixmsg";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-store-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function recorder(): { log: Logger; lines: Record<string, unknown>[]; text: () => string } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const log = new Logger("debug", {}, (line) => {
    raw.push(line);
    lines.push(JSON.parse(line));
  });
  return { log, lines, text: () => raw.join("\n") };
}

Deno.test("openStore() opens a migrated SQLite store that writes, reads, probes and backs up", async () => {
  await withDir(async (dir) => {
    const config = validateConfig({ data_dir: join(dir, "data") });
    await Deno.mkdir(config.data_dir);
    const store = await openStore(config, { log: recorder().log });
    try {
      assert.equal(store.kind, "sqlite");
      assert.equal(await store.query("settings.get", { key: "registration_code" }), null);
      const commits = store.commits;
      await store.run("settings.set", { key: "registration_code", value: "abc" });
      assert.ok(store.commits > commits);
      // A query sees every write whose promise has settled.
      assert.equal(await store.query("settings.get", { key: "registration_code" }), "abc");
      assert.equal(await store.ready(), true);
      const out = join(dir, "copy.db");
      await store.backup(out);
      assert.ok(existsSync(out));
      await assert.rejects(store.backup(out), /already exists/);
    } finally {
      await store.close();
    }
    assert.equal(store.closed, true);
    await assert.rejects(
      store.run("settings.set", { key: "registration_code", value: "x" }),
      (err: Error & { code?: string }) => err.code === "busy",
    );
  });
});

Deno.test("a query that fails rejects its promise instead of throwing", async () => {
  await withDir(async (dir) => {
    const store = await openSqliteStore({
      path: join(dir, "n.db"),
      backupDir: join(dir, "backup"),
      synchronous: "FULL",
      maxBatch: 256,
      maxWaitMs: 2,
    });
    try {
      store.reader.close();
      const p = store.query("endpoint.self_row", { id: "a" });
      assert.ok(p instanceof Promise);
      await assert.rejects(p);
    } finally {
      store.reader = (await import("./reader.ts")).openReader(join(dir, "n.db"));
      await store.close();
    }
  });
});

Deno.test("store.kind postgres says clearly when the PostgreSQL store is not in this build", async () => {
  const config = validateConfig({ store: { kind: "postgres", postgres_url: URL_WITH_PASSWORD } });
  const { log, text } = recorder();
  await assert.rejects(
    openStore(config, { log, loadPostgres: () => Promise.reject(new Error("Module not found")) }),
    (err: Error) =>
      err instanceof StoreOpenError && /PostgreSQL store is not available in this build/.test(
        err.message,
      ),
  );
  await assert.rejects(
    openStore(config, { log, loadPostgres: () => Promise.resolve({}) }),
    StoreOpenError,
  );
  assert.ok(!text().includes("s3cret-pw"), "the password is never logged");
});

Deno.test("an unreachable PostgreSQL is retried with backoff, logged without its password", async () => {
  await withDir(async (dir) => {
    const config = validateConfig({
      data_dir: dir,
      store: { kind: "postgres", postgres_url: URL_WITH_PASSWORD },
    });
    const { log, lines, text } = recorder();
    const tries: PostgresStoreOptions[] = [];
    let opened: Store | null = null;
    const store = await openStore(config, {
      log,
      retryFirstMs: 5,
      retryMaxMs: 20,
      loadPostgres: () =>
        Promise.resolve({
          async openPostgresStore(opts: PostgresStoreOptions) {
            tries.push(opts);
            if (tries.length < 4) {
              throw new StoreUnreachableError(`connect ECONNREFUSED for ${opts.url}`);
            }
            // A real store stands in for the database that came up.
            opened = await openSqliteStore({
              ...opts,
              path: join(dir, "n.db"),
              backupDir: join(dir, "backup"),
              synchronous: "FULL",
            });
            return opened;
          },
        }),
    });
    try {
      assert.equal(store, opened);
      assert.equal(tries.length, 4);
      assert.equal(tries[0].url, URL_WITH_PASSWORD, "the driver gets the real URL");
      assert.equal(tries[0].maxBatch, 256);
      const retries = lines.filter((l) => l.msg === "database unreachable, retrying");
      assert.deepEqual(retries.map((l) => l.retry_in_ms), [5, 10, 20]);
      assert.equal(retries[0].url, "postgres://nixmsg:***@127.0.0.1:1/nixmsg");
      assert.ok(lines.some((l) => l.msg === "database reachable again" && l.attempts === 4));
      assert.ok(!text().includes("s3cret-pw"), "the password is never logged");
    } finally {
      await store.close();
    }
  });
});

Deno.test("waiting for an unreachable PostgreSQL ends when start-up is cancelled", async () => {
  const config = validateConfig({ store: { kind: "postgres", postgres_url: URL_WITH_PASSWORD } });
  const cancel = new AbortController();
  let tries = 0;
  const opening = openStore(config, {
    log: recorder().log,
    signal: cancel.signal,
    retryFirstMs: 60_000,
    loadPostgres: () =>
      Promise.resolve({
        openPostgresStore() {
          tries++;
          queueMicrotask(() => cancel.abort());
          return Promise.reject(new StoreUnreachableError("connection refused"));
        },
      }),
  });
  await assert.rejects(opening, (err: Error) => err instanceof StoreOpenError);
  assert.equal(tries, 1, "no further try after the cancel, and no 60 s wait");
});

Deno.test("an error other than unreachable ends opening at once", async () => {
  const config = validateConfig({ store: { kind: "postgres", postgres_url: URL_WITH_PASSWORD } });
  let tries = 0;
  await assert.rejects(
    openStore(config, {
      log: recorder().log,
      retryFirstMs: 1,
      loadPostgres: () =>
        Promise.resolve({
          openPostgresStore() {
            tries++;
            return Promise.reject(new Error("password authentication failed"));
          },
        }),
    }),
    /password authentication failed/,
  );
  assert.equal(tries, 1);
});

Deno.test("backups are refused with PostgreSQL, pointing to pg_dump", () => {
  assert.equal(backupRefusal(validateConfig({})), null);
  const refused = backupRefusal(
    validateConfig({ store: { kind: "postgres", postgres_url: "postgres://h/db" } }),
  );
  assert.match(refused?.message ?? "", /pg_dump/);
});
