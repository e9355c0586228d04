import type { Logger } from "../log/log.ts";
import { setStoreReady } from "../metrics/metrics.ts";
import { openReader } from "./reader.ts";
import { HEALTH_PROBE_KEY } from "./ops/health.ts";
import type { Writer } from "./writer.ts";

/** Options of {@link Readiness}. */
export interface ReadinessOptions {
  /** The database file. */
  path: string;
  /** How long a success is reused (default 1 s), so `/readyz` polling costs one probe a second. */
  cacheMs?: number;
  /** Longest wait for the probe's commit (default 2 s); a writer stuck longer is not ready. */
  timeoutMs?: number;
  log?: Logger;
}

const SQL_READ_PROBE = "SELECT value FROM settings WHERE key = ?";
const SQL_READ_SCHEMA = "SELECT count(*) AS n FROM sqlite_master";

/**
 * Padding of the probe while commits have failed: as much new space as a large real batch, small
 * enough not to fill a small disk that has just got some room back.
 */
export const RECOVERY_PROBE_BYTES = 256 * 1024;

/**
 * Answers "can the store be used now" (spec 4.3 `/readyz`, 7.8) with a real write and a real
 * read: a `health.probe` op through the writer, then a fresh read-only connection that must see
 * the value just committed. A fresh connection reads the file itself, where the server's long-lived
 * reader would answer from its page cache after the file was truncated or damaged. A success is
 * reused for `cacheMs`; concurrent checks share one probe.
 *
 * issue 28: a failed real commit (any batch) makes the store not ready at once, whatever the
 * small probe says: on a full disk a one-row UPSERT still fits while real batches do not. It is
 * ready again once a probe padded with {@linkcode RECOVERY_PROBE_BYTES} commits: then a large
 * batch fits again. (After a checkpoint SQLite rewrites the WAL from its start, so on a full disk
 * writes may fit again for a while; the probe then says so truthfully.) Both changes are
 * logged with the reason and set `nixmsg_store_ready`.
 *
 * @example
 * ```ts
 * const readiness = new Readiness(writer, { path: "data/nixmsg.db" });
 * if (!(await readiness.check())) console.log("not ready");
 * ```
 */
export class Readiness {
  #writer: Pick<Writer, "run">;
  #path: string;
  #cacheMs: number;
  #timeoutMs: number;
  #log: Logger | undefined;
  #last: { at: number; ok: boolean } | null = null;
  #running: Promise<boolean> | null = null;
  #seq = 0;
  #failing = false;
  /** Set by a failed commit; cleared by a padded probe that commits. */
  #commitFailed = false;
  /** Failed commits seen so far: a probe is only proof when none failed while it ran. */
  #failures = 0;
  #unsubscribe: () => void;

  constructor(writer: Pick<Writer, "run" | "onCommit">, opts: ReadinessOptions) {
    this.#writer = writer;
    this.#path = opts.path;
    this.#cacheMs = opts.cacheMs ?? 1000;
    this.#timeoutMs = opts.timeoutMs ?? 2000;
    this.#log = opts.log;
    this.#unsubscribe = writer.onCommit((info) => {
      if (!info.ok) this.#onCommitFailed(info.ops);
    });
  }

  /** Stops listening to the writer. */
  close(): void {
    this.#unsubscribe();
  }

  #onCommitFailed(ops: number): void {
    this.#last = null;
    this.#failures++;
    if (this.#commitFailed) return;
    this.#commitFailed = true;
    this.#failing = true;
    setStoreReady(false, "commit_failed");
    this.#log?.error("Not ready: a database commit failed", { reason: "commit_failed", ops });
  }

  /** True when a write committed and a read saw it, now or within the last `cacheMs`. */
  check(): Promise<boolean> {
    // Only success is reused: while the store fails, every check probes again (one at a time),
    // so readiness returns as soon as a write commits.
    const last = this.#last;
    if (last !== null && last.ok && performance.now() - last.at < this.#cacheMs) {
      return Promise.resolve(true);
    }
    this.#running ??= this.#probe().then((ok) => {
      this.#last = { at: performance.now(), ok };
      this.#running = null;
      return ok;
    });
    return this.#running;
  }

  async #probe(): Promise<boolean> {
    const token = `${Date.now()}-${++this.#seq}`;
    const recovering = this.#commitFailed;
    const failuresBefore = this.#failures;
    try {
      const padBytes = recovering ? RECOVERY_PROBE_BYTES : 0;
      await this.#withTimeout(this.#writer.run("health.probe", { token, padBytes }));
      this.#read(token);
    } catch (err) {
      if (!this.#failing) {
        setStoreReady(false, "probe_failed");
        this.#log?.error("Readiness probe failed", {
          reason: "probe_failed",
          error: (err as Error)?.message ?? "",
        });
      }
      this.#failing = true;
      return false;
    }
    // A commit failed while this probe ran (its own batch included): it proves nothing.
    if (this.#failures !== failuresBefore) return false;
    if (this.#failing) {
      this.#log?.info("Ready again: a database commit succeeds", {
        reason: recovering ? "padded_probe_committed" : "probe_committed",
      });
    }
    this.#commitFailed = false;
    this.#failing = false;
    setStoreReady(true);
    return true;
  }

  #read(token: string): void {
    const db = openReader(this.#path);
    try {
      db.prepare(SQL_READ_SCHEMA).get();
      const row = db.prepare(SQL_READ_PROBE).get(HEALTH_PROBE_KEY) as { value: string } | undefined;
      const value = row?.value ?? "";
      if (value !== token && !value.startsWith(`${token}:`)) {
        throw new Error("The committed probe value cannot be read back");
      }
    } finally {
      db.close();
    }
  }

  async #withTimeout<T>(p: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`No commit within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
