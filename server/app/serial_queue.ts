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
 * whose writer op is queued waits for its COMMIT while the next one starts), at most `capacity`
 * (256). Once items waiting plus in flight reach the capacity, `push` holds the MQTT read loop
 * until there is room: no frame is dropped. The broker hands over all packets of one socket read
 * at once, so the items waiting may briefly exceed the capacity by one read's worth.
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

  /** Items started and not yet complete; never more than the capacity. */
  get inFlight(): number {
    return this.#inFlight;
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
      while (this.#items.length > 0 && !this.#closed && this.#inFlight < this.#capacity) {
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
    this.#run();
    // The broker hands over every packet of one read at once and reads on once all of them are
    // taken, so each may hold a waiter: room again releases them all.
    if (this.length < this.#capacity) { for (const w of this.#waiters.splice(0)) w(); }
  }
}
