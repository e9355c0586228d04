/**
 * What `start` hands back for one item: nothing when the item is complete already, or the
 * promise of its completion when later items may start before it completes (wrapped, since an
 * async function would otherwise adopt it and wait).
 */
export type Started = { done: Promise<void> } | void;

/**
 * A bounded FIFO whose items are started strictly one after another, in push order (spec 5: each
 * endpoint's requests are taken in arrival order). `start(item)` resolves once the next item may
 * start; it may hand back the item's completion, so several items can be in flight (a request
 * whose writer op is queued waits for its COMMIT while the next one starts). Items waiting plus
 * items in flight are bounded by the capacity (256): a full queue back-pressures the MQTT read
 * loop and never drops a frame.
 */
export class SerialQueue<T> {
  #items: T[] = [];
  #capacity: number;
  #start: (item: T) => Promise<Started>;
  #inFlight = 0;
  #running = false;
  #waiters: (() => void)[] = [];
  #closed = false;

  constructor(capacity: number, start: (item: T) => Promise<Started>) {
    this.#capacity = capacity;
    this.#start = start;
  }

  /** Items waiting, being started or in flight. */
  get length(): number {
    return this.#items.length + this.#inFlight;
  }

  /**
   * Queues `item`; resolves once the queue has room again, so the caller (the MQTT reader)
   * waits before reading the next packet when the queue is full.
   */
  push(item: T): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#items.push(item);
    this.#run();
    if (this.length < this.#capacity) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Drops everything still waiting; items started already finish. */
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
        const item = this.#items.shift()!;
        this.#inFlight++;
        let started: Started = undefined;
        try {
          started = await this.#start(item);
        } catch {
          // The worker reports its own failures; one bad item must not stop the queue.
        }
        if (started) started.done.then(() => this.#finish(), () => this.#finish());
        else this.#finish();
      }
    } finally {
      this.#running = false;
    }
  }

  #finish(): void {
    this.#inFlight--;
    if (this.length < this.#capacity) this.#waiters.shift()?.();
  }
}
