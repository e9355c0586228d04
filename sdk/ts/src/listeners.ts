import { NixMsgError } from "./errors.ts";

/** A set of application callbacks; `add` returns the function that removes the callback. */
export class Listeners<A> {
  readonly #set = new Set<(arg: A) => unknown>();
  #waiters: (() => void)[] = [];

  /** Number of callbacks. */
  get size(): number {
    return this.#set.size;
  }

  /** Adds a callback; anything but a function fails with `bad_request`. */
  add(fn: (arg: A) => unknown): () => void {
    if (typeof fn !== "function") {
      throw new NixMsgError("bad_request", "A callback must be a function");
    }
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

  /**
   * Calls every callback in turn, awaiting each that returns a promise; the first error
   * propagates. When no callback returns a promise, it all happens synchronously (and a throw
   * is thrown), so that what follows the callbacks runs before anything they queued.
   */
  run(arg: A): void | Promise<void> {
    const fns = [...this.#set];
    for (const [i, fn] of fns.entries()) {
      const r = fn(arg);
      if (r instanceof Promise) {
        return r.then(() => runFrom(fns.slice(i + 1), arg));
      }
    }
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

async function runFrom<A>(fns: ((arg: A) => unknown)[], arg: A): Promise<void> {
  for (const fn of fns) await fn(arg);
}
