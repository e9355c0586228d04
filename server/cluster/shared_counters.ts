// The lockouts' counters of a cluster (issue 30 item 4), kept in the store: a wrong guess on any
// node counts for every node, and a lock started anywhere holds everywhere.
import type { SharedCounters, SharedRule } from "../auth/lockout.ts";
import type { Logger } from "../log/log.ts";
import type { Store } from "../store/store.ts";

/**
 * {@linkcode SharedCounters} on the store's `lockout.*` ops and query. A store error is logged
 * (never with a key's parts beyond the rule names) and the attempt falls back on the node's own
 * counts: refusing every login while the store is down would be worse than a weaker lock.
 *
 * @example
 * ```ts
 * const shared = new StoreCounters(store, log, Date.now);
 * const locks = new LoginLockouts({ shared });
 * ```
 */
export class StoreCounters implements SharedCounters {
  #store: Store;
  #log: Logger;
  #clock: () => number;

  constructor(store: Store, log: Logger, clock: () => number) {
    this.#store = store;
    this.#log = log;
    this.#clock = clock;
  }

  async state(keys: string[]): Promise<Map<string, number>> {
    try {
      const rows = await this.#store.query("lockout.state", { keys, now: this.#clock() });
      return new Map(rows.map((r) => [r.key, r.lockedUntil]));
    } catch (err) {
      this.#log.warn("shared lockout read failed", { error: (err as Error).message });
      return new Map();
    }
  }

  async fail(rules: SharedRule[]): Promise<(number | null)[]> {
    try {
      return await this.#store.run("lockout.fail", { rules });
    } catch (err) {
      this.#log.warn("shared lockout count failed", { error: (err as Error).message });
      return rules.map(() => null);
    }
  }

  async clear(keys: string[], prefixes: string[]): Promise<void> {
    try {
      await this.#store.run("lockout.clear", { keys, prefixes });
    } catch (err) {
      this.#log.warn("shared lockout clear failed", { error: (err as Error).message });
    }
  }
}
