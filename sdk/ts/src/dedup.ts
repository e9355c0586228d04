import { NixMsgError } from "./errors.ts";

/**
 * A bounded record of what happened to each received item (spec 9 "接收"): insertion ordered,
 * the oldest record is dropped when the capacity (default 10,000) is exceeded.
 *
 * @example
 * ```ts
 * const seen = new DedupCache<"delivered" | "acked">(10_000);
 * seen.set("app-1\u0000018f…", "delivered");
 * seen.get("app-1\u0000018f…"); // "delivered"
 * ```
 */
export class DedupCache<S> {
  readonly #capacity: number;
  readonly #map = new Map<string, S>();

  constructor(capacity = 10_000) {
    if (!(capacity >= 1)) {
      throw new NixMsgError("bad_request", "dedupCapacity must be at least 1");
    }
    this.#capacity = capacity;
  }

  /** Number of records held. */
  get size(): number {
    return this.#map.size;
  }

  /** The state recorded for `key`, if any. */
  get(key: string): S | undefined {
    return this.#map.get(key);
  }

  /** Records `state` for `key`; a new key may push out the oldest record. */
  set(key: string, state: S): void {
    if (this.#map.has(key)) {
      this.#map.set(key, state);
      return;
    }
    this.#map.set(key, state);
    while (this.#map.size > this.#capacity) {
      const oldest = this.#map.keys().next().value as string;
      this.#map.delete(oldest);
    }
  }

  /** Forgets `key`, so that the next arrival is processed again. */
  delete(key: string): void {
    this.#map.delete(key);
  }
}

/** The dedup key of a message: sender and message id (spec 9). */
export function messageKey(from: string, id: string): string {
  return `${from}\u0000${id}`;
}
