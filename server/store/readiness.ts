import type { Logger } from "../log/log.ts";
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
 * Answers "can the store be used now" (spec 4.3 `/readyz`, 7.8) with a real write and a real
 * read: a `health.probe` op through the writer, then a fresh read-only connection that must see
 * the value just committed. A fresh connection reads the file itself, where the server's long-lived
 * reader would answer from its page cache after the file was truncated or damaged. A success is
 * reused for `cacheMs`; concurrent checks share one probe.
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

  constructor(writer: Pick<Writer, "run">, opts: ReadinessOptions) {
    this.#writer = writer;
    this.#path = opts.path;
    this.#cacheMs = opts.cacheMs ?? 1000;
    this.#timeoutMs = opts.timeoutMs ?? 2000;
    this.#log = opts.log;
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
    try {
      await this.#withTimeout(this.#writer.run("health.probe", { token }));
      this.#read(token);
    } catch (err) {
      if (!this.#failing) {
        this.#log?.error("Readiness probe failed", { error: (err as Error)?.message ?? "" });
      }
      this.#failing = true;
      return false;
    }
    if (this.#failing) this.#log?.info("Readiness probe succeeds again");
    this.#failing = false;
    return true;
  }

  #read(token: string): void {
    const db = openReader(this.#path);
    try {
      db.prepare(SQL_READ_SCHEMA).get();
      const row = db.prepare(SQL_READ_PROBE).get(HEALTH_PROBE_KEY) as { value: string } | undefined;
      if (row?.value !== token) throw new Error("The committed probe value cannot be read back");
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
