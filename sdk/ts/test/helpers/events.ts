/** Recording events and waiting on them with bounded timeouts (no fixed sleeps). */
import { scaledMs } from "../../../../tests/helpers/fault_counts.ts";

/**
 * How long a test waits for an expected event by default: 15 s on an idle machine, times the
 * load average per core (1–4) on a loaded one, so a busy CI machine does not time out a handshake.
 */
export const WAIT_MS = scaledMs(15_000, { capMs: 60_000 });

/**
 * A list of recorded events; `waitFor` resolves when one matches, `expectNone` asserts that none
 * matching arrives within a window (the only way to observe an absence).
 */
export class Events<T> {
  readonly items: T[] = [];
  #watchers = new Set<() => void>();

  /** Records an event. Pass `events.push` as a callback. */
  readonly push = (item: T): void => {
    this.items.push(item);
    for (const w of [...this.#watchers]) w();
  };

  /** Calls `fn` on every event recorded from now on; returns its removal. */
  watch(fn: () => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  count(pred: (item: T) => boolean = () => true): number {
    return this.items.filter(pred).length;
  }

  /** Resolves with the first matching event, recorded already or later. */
  waitFor(pred: (item: T) => boolean, what: string, timeoutMs = WAIT_MS): Promise<T> {
    const found = this.items.find(pred);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#watchers.delete(check);
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        const hit = this.items.find(pred);
        if (hit === undefined) return;
        clearTimeout(timer);
        this.#watchers.delete(check);
        resolve(hit);
      };
      this.#watchers.add(check);
    });
  }

  /** Resolves when `n` events match. */
  async waitCount(n: number, pred: (item: T) => boolean, what: string, timeoutMs = WAIT_MS) {
    await this.waitFor(() => this.count(pred) >= n, what, timeoutMs).catch(() => {
      throw new Error(`Timed out waiting for ${n} × ${what}; got ${this.count(pred)}`);
    });
  }

  /** Rejects if a matching event arrives within `windowMs`; resolves after the window. */
  expectNone(pred: (item: T) => boolean, what: string, windowMs: number): Promise<void> {
    const before = this.count(pred);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.count(pred) === before) return;
        clearTimeout(timer);
        this.#watchers.delete(check);
        reject(new Error(`Unexpected ${what}`));
      };
      const timer = setTimeout(() => {
        this.#watchers.delete(check);
        resolve();
      }, windowMs);
      this.#watchers.add(check);
    });
  }
}

/** Rejects after `ms` unless `p` settles first. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
