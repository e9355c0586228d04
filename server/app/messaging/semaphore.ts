/** A counting semaphore with FIFO waiters. */
export class Semaphore {
  #free: number;
  #waiters: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Slots not taken. */
  get free(): number {
    return this.#free;
  }

  /** Waiters queued for a slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves once a slot is taken for the caller. */
  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Gives a slot back (to the longest waiter first). */
  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free++;
  }
}
