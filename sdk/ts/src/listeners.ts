/** A set of application callbacks; `add` returns the function that removes the callback. */
export class Listeners<A> {
  readonly #set = new Set<(arg: A) => unknown>();
  #waiters: (() => void)[] = [];

  /** Number of callbacks. */
  get size(): number {
    return this.#set.size;
  }

  add(fn: (arg: A) => unknown): () => void {
    this.#set.add(fn);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
    return () => {
      this.#set.delete(fn);
    };
  }

  /** Resolves once at least one callback is registered. */
  whenAny(): Promise<void> {
    if (this.#set.size > 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Calls every callback in turn, awaiting each; the first error propagates. */
  async run(arg: A): Promise<void> {
    for (const fn of [...this.#set]) await fn(arg);
  }

  /** Calls every callback synchronously; errors go to `onError`. */
  emit(arg: A, onError: (err: unknown) => void): void {
    for (const fn of [...this.#set]) {
      try {
        const r = fn(arg);
        if (r instanceof Promise) r.catch(onError);
      } catch (err) {
        onError(err);
      }
    }
  }
}
