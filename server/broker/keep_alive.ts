/**
 * One timer for every connection's keep-alive (issue 33).
 *
 * aedes arms a runtime timer per connection, `(keepalive * 1500) + 1` ms [MQTT-3.1.2-24], and
 * calls `refresh()` on it for every packet. Under Deno each pending timer costs about 2 KiB (a
 * Timeout object and the runtime's own timer entry); with thousands of idle connections that is a
 * tenth of their memory. Here a connection's timer is a small handle with the same `refresh()`,
 * kept in a binary heap by due time, and one runtime timer waits for the earliest. A handle that
 * comes due after a `refresh()` is put back for `last + interval`, so each one fires exactly when
 * aedes' own timer would have: `interval` ms after the last packet.
 *
 * @example
 * ```ts
 * const timers = new KeepAliveTimers();
 * const handle = timers.add(91_501, () => client.emit("error", new Error("keep alive timeout")));
 * handle.refresh(); // a packet arrived
 * timers.remove(handle); // the connection closed
 * ```
 */
export class KeepAliveTimers {
  readonly #now: () => number;
  readonly #heap: KeepAliveHandle[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The due time the runtime timer is armed for (Infinity when none). */
  #armedFor = Infinity;

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? (() => performance.now());
  }

  /** How many connections are watched. */
  get size(): number {
    return this.#heap.length;
  }

  /** Watches a connection: `onTimeout` runs `intervalMs` after now or its last `refresh()`. */
  add(intervalMs: number, onTimeout: () => void): KeepAliveHandle {
    const h = new KeepAliveHandle(this.#now, intervalMs, onTimeout);
    h.due = h.last + intervalMs;
    this.#push(h);
    this.#arm();
    return h;
  }

  /** Stops watching `h` (its connection closed); nothing happens when it is not watched. */
  remove(h: KeepAliveHandle): void {
    // Also when it came due in the same `fire()` and waits for its call: it is not called.
    h.onTimeout = null;
    this.#take(h);
  }

  #take(h: KeepAliveHandle): void {
    const i = h.index;
    if (i < 0 || this.#heap[i] !== h) return;
    const last = this.#heap.pop()!;
    if (last !== h) {
      this.#heap[i] = last;
      last.index = i;
      this.#down(i);
      this.#up(last.index);
    }
    h.index = -1;
    if (this.#heap.length === 0) this.#disarm();
  }

  /** Stops the runtime timer and forgets every handle (the broker closed). */
  close(): void {
    this.#disarm();
    for (const h of this.#heap.splice(0)) {
      h.index = -1;
      h.onTimeout = null;
    }
  }

  /** Runs what is due now (the runtime timer's callback; tests call it with their clock). */
  fire(): void {
    this.#disarm();
    const now = this.#now();
    const due: KeepAliveHandle[] = [];
    while (this.#heap.length > 0 && this.#heap[0].due <= now) {
      const h = this.#heap[0];
      const next = h.last + h.intervalMs;
      if (next > now) {
        // Refreshed since it was queued: wait for the new due time.
        h.due = next;
        this.#down(0);
      } else {
        this.#take(h);
        due.push(h);
      }
    }
    this.#arm();
    // One callback may remove another handle that came due with it (its connection closed).
    for (const h of due) {
      const onTimeout = h.onTimeout;
      h.onTimeout = null;
      onTimeout?.();
    }
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #arm(): void {
    if (this.#heap.length === 0) return;
    const first = this.#heap[0].due;
    if (this.#timer !== undefined && first >= this.#armedFor) return;
    clearTimeout(this.#timer);
    this.#armedFor = first;
    this.#timer = setTimeout(() => this.fire(), Math.max(0, first - this.#now()));
    Deno.unrefTimer(this.#timer);
  }

  #push(h: KeepAliveHandle): void {
    h.index = this.#heap.length;
    this.#heap.push(h);
    this.#up(h.index);
  }

  #up(i: number): void {
    const heap = this.#heap;
    const h = heap[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].due <= h.due) break;
      heap[i] = heap[parent];
      heap[i].index = i;
      i = parent;
    }
    heap[i] = h;
    h.index = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const h = heap[i];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r].due < heap[l].due ? r : l;
      if (heap[c].due >= h.due) break;
      heap[i] = heap[c];
      heap[i].index = i;
      i = c;
    }
    heap[i] = h;
    h.index = i;
  }
}

/** One connection's keep-alive: aedes calls `refresh()` on it for every packet. */
export class KeepAliveHandle {
  readonly #now: () => number;
  readonly intervalMs: number;
  /** When the last packet arrived (or the handle was made). */
  last: number;
  /** The time it is queued for in the heap (at most `last + intervalMs`). */
  due = 0;
  /** Its place in the heap; -1 when not watched. */
  index = -1;
  /** What runs when it comes due; null once removed. */
  onTimeout: (() => void) | null;

  constructor(now: () => number, intervalMs: number, onTimeout: () => void) {
    this.#now = now;
    this.intervalMs = intervalMs;
    this.onTimeout = onTimeout;
    this.last = now();
  }

  /** A packet arrived: the deadline moves to `intervalMs` from now. */
  refresh(): this {
    this.last = this.#now();
    return this;
  }
}
