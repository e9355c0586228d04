/** Requests other than `send` waiting for their `resp`, matched by `rid` (spec 6). */
import { NixMsgError } from "./errors.ts";

interface Pending {
  readonly resolve: (data: Record<string, unknown>) => void;
  readonly reject: (err: NixMsgError) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/**
 * @example
 * ```ts
 * const requests = new PendingRequests(30_000);
 * const answer = requests.wait(rid, "self.get"); // then publish the frame
 * requests.settle(resp.rid, resp.ok, resp.data, error); // resolves `answer`
 * ```
 */
export class PendingRequests {
  readonly #timeoutMs: number;
  readonly #map = new Map<string, Pending>();
  readonly #onSettled: () => void;

  /** `onSettled` runs after each request ends (answered, timed out or failed). */
  constructor(timeoutMs: number, onSettled: () => void = () => {}) {
    this.#timeoutMs = timeoutMs;
    this.#onSettled = onSettled;
  }

  /** Requests waiting for their `resp`. */
  get size(): number {
    return this.#map.size;
  }

  /** Registers `rid` and resolves with `resp.data`; `timeout` when no answer comes in time. */
  wait(rid: string, type: string): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#map.delete(rid);
        reject(new NixMsgError("timeout", `No response to ${type} within ${this.#timeoutMs} ms`));
        this.#onSettled();
      }, this.#timeoutMs);
      this.#map.set(rid, { resolve, reject, timer });
    });
  }

  /** Applies a `resp`; false when `rid` is not waited for. */
  settle(rid: string, ok: boolean, data: unknown, error: NixMsgError | undefined): boolean {
    const p = this.#map.get(rid);
    if (!p) return false;
    this.#map.delete(rid);
    clearTimeout(p.timer);
    if (ok) p.resolve((data ?? {}) as Record<string, unknown>);
    else {
      p.reject(error ?? new NixMsgError("bad_response", "Request failed without an error"));
    }
    this.#onSettled();
    return true;
  }

  /** Fails every waiting request with `error` (the connection is gone). */
  failAll(error: NixMsgError): void {
    const all = [...this.#map.values()];
    this.#map.clear();
    for (const p of all) {
      clearTimeout(p.timer);
      p.reject(error);
    }
    if (all.length > 0) this.#onSettled();
  }
}
