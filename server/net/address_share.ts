/**
 * Per-address counts with a cap (issue 28): how many of one scarce resource (open connections,
 * HTTP connections in progress, unauthenticated MQTT connections) each address group holds. A
 * key lives only while it holds something, so the map is bounded by what is held.
 */

/** Counts what each key holds and refuses a key at its cap. */
export class AddressShare {
  readonly #cap: number;
  readonly #held = new Map<string, number>();

  constructor(cap: number) {
    if (!Number.isInteger(cap) || cap < 1) {
      throw new RangeError(`Cannot create address share: cap ${cap} is not a positive integer`);
    }
    this.#cap = cap;
  }

  /** The most one key may hold. */
  get cap(): number {
    return this.#cap;
  }

  /** Keys holding something now. */
  get keys(): number {
    return this.#held.size;
  }

  /** What `key` holds now. */
  heldBy(key: string): number {
    return this.#held.get(key) ?? 0;
  }

  /** Takes one unit for `key`; returns its release (idempotent), or null at the cap. */
  take(key: string): (() => void) | null {
    const n = this.#held.get(key) ?? 0;
    if (n >= this.#cap) return null;
    this.#held.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#held.get(key) ?? 1) - 1;
      if (left <= 0) this.#held.delete(key);
      else this.#held.set(key, left);
    };
  }
}
