import { join } from "node:path";

/** The lock file inside the data directory; it stays after exit, only the lock goes. */
export const LOCK_FILE = "nixmsg.lock";

/** The data directory is held by another process (spec 7.2: one writer per database). */
export class DataDirLockedError extends Error {
  override name = "DataDirLockedError";
}

/** An exclusive lock on a data directory, held until `release` or process exit. */
export interface DataDirLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes an exclusive, non-blocking lock (`flock`) on `<dataDir>/nixmsg.lock`, so that a second
 * server cannot open the same database or overwrite `listen.addr`. The operating system drops
 * the lock when the process ends, however it ends, so a crash leaves nothing stale behind.
 *
 * @throws {DataDirLockedError} when another process (or another server in this process) holds it.
 * @example
 * ```ts
 * const lock = lockDataDir("data");
 * try { serve(); } finally { lock.release(); }
 * ```
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const file = Deno.openSync(path, { read: true, write: true, create: true });
  let locked = false;
  try {
    locked = file.tryLockSync(true);
  } finally {
    if (!locked) file.close();
  }
  if (!locked) {
    throw new DataDirLockedError(
      `Data directory ${dataDir} is in use by another NixMsg server (${path} is locked)`,
    );
  }
  // For people looking at the directory; the lock, not this number, is what counts.
  file.truncateSync(0);
  file.writeSync(new TextEncoder().encode(`${Deno.pid}\n`));
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      file.unlockSync();
      file.close();
    },
  };
}
