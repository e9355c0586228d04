import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { redactUrl, validateConfig } from "../config/config.ts";
import type { Config } from "../config/types.ts";
import { Logger } from "../log/log.ts";
import { dbPath } from "../app/paths.ts";
import { copyStore, CopyTargetNotEmptyError, sqliteCopyTarget } from "../store/copy.ts";
import { DataDirLockedError, lockDataDir } from "../store/data_lock.ts";
import { migrate } from "../store/migrations.ts";
import type { CopyTarget, Store } from "../store/store.ts";
import { openStore } from "../store/store_factory.ts";

/** Where the command writes (the CLI's `Io`). */
interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** Shortest time between two progress lines of one table. */
const PROGRESS_EVERY_MS = 1000;

async function openTarget(
  config: Config,
  to: string,
): Promise<{ target: CopyTarget; store: Store | null }> {
  if (to.startsWith("file:")) {
    const path = to.startsWith("file://") ? fileURLToPath(to) : to.slice("file:".length);
    return { target: await sqliteCopyTarget(path, join(config.data_dir, "backup")), store: null };
  }
  // The same checks as store.postgres_url; the environment's URL must not replace --to.
  const pg = validateConfig({
    data_dir: config.data_dir,
    store: { kind: "postgres", postgres_url: to },
  });
  const store = await openStore(pg, { log: new Logger(config.log.level) });
  const target = store.copyTarget?.();
  if (target === undefined) {
    await store.close();
    throw new Error("This build's PostgreSQL store cannot receive a copy");
  }
  return { target, store };
}

/**
 * `nixmsg store copy --to URL` (issue 29): the stopped SQLite database into an empty store.
 * Returns the exit code.
 */
export async function storeCopy(config: Config, to: string, io: Io): Promise<number> {
  const source = dbPath(config.data_dir);
  if (!existsSync(source)) {
    io.err(`No database to copy: ${source} does not exist`);
    return 1;
  }
  // A running server would go on writing rows the copy has already passed.
  let lock;
  try {
    lock = lockDataDir(config.data_dir);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      io.err(`Stop the server first: ${err.message}`);
      return 1;
    }
    throw err;
  }
  let opened: { target: CopyTarget; store: Store | null } | null = null;
  try {
    await migrate(source, { backupDir: join(config.data_dir, "backup") });
    opened = await openTarget(config, to);
    const shown = to.startsWith("file:") ? to : redactUrl(to);
    io.out(`Copying ${source} to ${shown}`);
    let last = { table: "", at: 0 };
    const report = await copyStore(source, opened.target, {
      progress: (p) => {
        const now = performance.now();
        const end = p.done === p.total;
        if (!end && p.table === last.table && now - last.at < PROGRESS_EVERY_MS) return;
        if (end && p.done === 0 && p.table === last.table) return;
        last = { table: p.table, at: now };
        io.out(`  ${p.table}: ${p.done}/${p.total}`);
      },
    });
    for (const t of report.tables) {
      const mark = t.source === t.target ? "" : "  MISMATCH";
      io.out(`  ${t.table}: source ${t.source}, target ${t.target}${mark}`);
    }
    if (!report.equal) {
      io.err("Copy failed: the counts differ (see above)");
      return 1;
    }
    io.out("Copy complete: every count is equal.");
    return 0;
  } catch (err) {
    const message = (err as Error).message.replaceAll(to, redactUrl(to));
    io.err(
      err instanceof CopyTargetNotEmptyError
        ? `Copy refused: ${message}`
        : `Copy failed: ${message}`,
    );
    return 1;
  } finally {
    await opened?.target.close();
    await opened?.store?.close();
    lock.release();
  }
}
