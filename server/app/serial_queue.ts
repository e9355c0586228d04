/**
 * Starts one item. The item is in flight until the promise it returns settles (or at once when
 * it returns nothing). The next item starts once this one calls `release` or completes, whichever
 * comes first; an item that never calls `release` is worked alone.
 */
export type StartItem<T> = (item: T, release: () => void) => Promise<void> | void;

/**
 * A bounded FIFO whose items are started strictly one after another, in push order (spec 5: each
 * endpoint's requests are taken in arrival order). An item may let the next one start before it
 * completes (a request whose writer op is queued waits for its COMMIT while the next one starts),
 * so several items can be in flight, at most `capacity` (256). Once items waiting plus in flight
 * reach the capacity, `push` holds the MQTT read loop until there is room: no frame is dropped.
 * The broker hands over all packets of one socket read at once, so the items waiting may briefly
 * exceed the capacity by one read's worth.
 *
 * Per item it allocates no promise of its own (issue 19: this runs for every request frame); a
 * `release` from inside a running item schedules the next start as a microtask, so items never
 * start nested in each other's call stacks.
 */
export class SerialQueue<T> {
  #items: T[] = [];
  #capacity: number;
  #start: StartItem<T>;
  #inFlight = 0;
  /** An item has started and has neither released nor completed. */
  #blocked = false;
  #pumping = false;
  #scheduled = false;
  #waiters: (() => void)[] = [];
  #othersWaiters: (() => void)[] = [];
  #closed = false;
  readonly #pumpLater = () => {
    this.#scheduled = false;
    this.#pump();
  };

  constructor(capacity: number, start: StartItem<T>) {
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
   * Queues `item`. While the queue has room it returns nothing; once full, a promise that
   * resolves when there is room again, so the caller (the MQTT reader) waits before reading the
   * next packet.
   */
  push(item: T): Promise<void> | void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#pump();
    if (this.length < this.#capacity) return;
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * For the item that is starting (it has not released): settles once every item started before
   * it has completed. Nothing later starts meanwhile, so these are all the others in flight.
   */
  othersDone(): Promise<void> {
    if (this.#inFlight <= 1) return Promise.resolve();
    return new Promise((resolve) => this.#othersWaiters.push(resolve));
  }

  /** Drops everything still waiting; items started already finish. */
  close(): void {
    this.#closed = true;
    this.#items.length = 0;
    for (const w of this.#waiters.splice(0)) w();
  }

  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (
        !this.#blocked && this.#items.length > 0 && !this.#closed &&
        this.#inFlight < this.#capacity
      ) {
        this.#startOne(this.#items.shift()!);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /**
   * Inside `#pump` the loop goes on by itself; otherwise the next item starts soon, but not
   * nested in the caller (a handler in the middle of queuing its op).
   */
  #kick(): void {
    if (this.#pumping || this.#scheduled || this.#items.length === 0) return;
    this.#scheduled = true;
    queueMicrotask(this.#pumpLater);
  }

  #startOne(item: T): void {
    this.#inFlight++;
    this.#blocked = true;
    let released = false;
    let completed = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#blocked = false;
      this.#kick();
    };
    const complete = () => {
      if (completed) return;
      completed = true;
      this.#inFlight--;
      if (this.#inFlight <= 1) { for (const w of this.#othersWaiters.splice(0)) w(); }
      // The broker hands over every packet of one read at once and reads on once all of them
      // are taken, so each may hold a waiter: room again releases them all.
      if (this.length < this.#capacity) { for (const w of this.#waiters.splice(0)) w(); }
      if (released) this.#kick();
      else release();
    };
    let running: Promise<void> | void;
    try {
      running = this.#start(item, release);
    } catch {
      // The worker reports its own failures; one bad item must not stop the queue.
      running = undefined;
    }
    if (running) running.then(complete, complete);
    else complete();
  }
}
