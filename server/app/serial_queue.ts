/**
 * A bounded FIFO worked by one consumer at a time (spec 5: each endpoint's requests are handled
 * serially; a full queue of 256 back-pressures the MQTT read loop and never drops a frame).
 */
export class SerialQueue<T> {
  #items: T[] = [];
  #capacity: number;
  #work: (item: T) => Promise<void>;
  #running = false;
  #waiters: (() => void)[] = [];
  #closed = false;

  constructor(capacity: number, work: (item: T) => Promise<void>) {
    this.#capacity = capacity;
    this.#work = work;
  }

  /** Items waiting or in progress. */
  get length(): number {
    return this.#items.length;
  }

  /**
   * Queues `item`; resolves once the queue has room again, so the caller (the MQTT reader)
   * waits before reading the next packet when the queue is full.
   */
  push(item: T): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#items.push(item);
    this.#run();
    if (this.#items.length < this.#capacity) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Drops everything still queued; the item in progress finishes. */
  close(): void {
    this.#closed = true;
    this.#items.length = 0;
    for (const w of this.#waiters.splice(0)) w();
  }

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#items.length > 0 && !this.#closed) {
        const item = this.#items[0];
        try {
          await this.#work(item);
        } catch {
          // The worker reports its own failures; one bad item must not stop the queue.
        }
        this.#items.shift();
        if (this.#items.length < this.#capacity) this.#waiters.shift()?.();
      }
    } finally {
      this.#running = false;
    }
  }
}
