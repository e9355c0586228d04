/**
 * Throttling of repeated log lines (issue 28): the first lines of a kind (`burst`, default 1) are
 * written at once; more of the same kind within the window are only counted, and one summary line says how many
 * ("… and 1,234 more in the last 10 s") when the window ends.
 */
import type { LogFields, Logger } from "./log.ts";

/** The window of {@linkcode LogThrottle}: 10 s. */
export const THROTTLE_WINDOW_MS = 10_000;

type Level = "debug" | "info" | "warn" | "error";

interface Window {
  written: number;
  suppressed: number;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Writes at most one line per key and window, plus a count of the rest. Keys must come from a
 * small fixed set (a message and fixed words), never from client input, so the map stays small.
 *
 * @example
 * const throttle = new LogThrottle(log);
 * throttle.line("info", "auth failure", "login/wrong_password", { kind: "login" });
 */
export class LogThrottle {
  readonly #log: Logger;
  readonly #windowMs: number;
  readonly #burst: number;
  readonly #open = new Map<string, Window>();

  constructor(log: Logger, opts: { windowMs?: number; burst?: number } = {}) {
    this.#log = log;
    this.#windowMs = opts.windowMs ?? THROTTLE_WINDOW_MS;
    this.#burst = opts.burst ?? 1;
  }

  /**
   * Writes `msg` with `fields` now, or counts it when a line of `key` was written within the
   * window. The summary line carries only `common` (fields true of every counted line).
   */
  line(
    level: Level,
    msg: string,
    key: string,
    fields: LogFields = {},
    common: LogFields = {},
  ): void {
    const w = this.#open.get(key);
    if (w !== undefined) {
      if (w.written < this.#burst) {
        w.written++;
        this.#log[level](msg, fields);
      } else w.suppressed++;
      return;
    }
    this.#log[level](msg, fields);
    const timer = setTimeout(() => {
      const done = this.#open.get(key);
      this.#open.delete(key);
      if (done === undefined || done.suppressed === 0) return;
      const seconds = Math.round(this.#windowMs / 1000);
      this.#log[level](
        `${msg} … and ${done.suppressed.toLocaleString("en-US")} more in the last ${seconds} s`,
        { ...common, suppressed: done.suppressed },
      );
    }, this.#windowMs);
    Deno.unrefTimer(timer as unknown as number);
    this.#open.set(key, { written: 1, suppressed: 0, timer });
  }

  /** Stops the timers; pending counts are dropped. */
  close(): void {
    for (const w of this.#open.values()) clearTimeout(w.timer);
    this.#open.clear();
  }
}
