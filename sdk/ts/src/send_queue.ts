/**
 * The in-memory send queue of spec 9 ("发送"): at most `capacity` sends held (in flight
 * included), at most `maxInFlight` published without a response, the same id and content when
 * replayed after a reconnect, and `rate_limited` answers retried with backoff.
 */
import { Backoff } from "./backoff.ts";
import { NixMsgError } from "./errors.ts";
import type { SendResult } from "./types.ts";

/** A `send` frame without `rid`; the content is fixed when the send is queued. */
export type SendFrameBody = Readonly<Record<string, unknown>> & {
  readonly id: string;
};

interface Entry {
  readonly frame: SendFrameBody;
  readonly resolve: (r: SendResult) => void;
  readonly reject: (e: NixMsgError) => void;
  rid: string | null;
  notBefore: number;
  retry: Backoff | null;
}

/** Options of a {@link SendQueue}; the defaults are the spec's. */
export interface SendQueueOptions {
  readonly capacity?: number;
  readonly maxInFlight?: number;
  /** Random source for the retry jitter. */
  readonly random?: () => number;
}

/** What to do with a `resp` to a send. */
export type SettleOutcome = "done" | "retry" | "unknown";

/**
 * @example
 * ```ts
 * const queue = new SendQueue();
 * const result = queue.add({ id: uuidv7(), to, body });
 * for (let e; (e = queue.take(Date.now(), nextRid)); ) publish(frameFor(e.rid, e.frame));
 * queue.settle(resp.rid, resp, Date.now()); // resolves `result`
 * ```
 */
export class SendQueue {
  readonly #capacity: number;
  readonly #maxInFlight: number;
  readonly #random: (() => number) | undefined;
  /** In the order of `send` calls; replay after a reconnect keeps it. */
  #entries: Entry[] = [];
  #byRid = new Map<string, Entry>();
  #closed: NixMsgError | null = null;

  constructor(options: SendQueueOptions = {}) {
    this.#capacity = options.capacity ?? 1000;
    this.#maxInFlight = options.maxInFlight ?? 100;
    this.#random = options.random;
  }

  /** Sends held, in flight included. */
  get size(): number {
    return this.#entries.length;
  }

  /** Sends published and waiting for their `resp`. */
  get inFlight(): number {
    return this.#byRid.size;
  }

  /**
   * Queues a send and returns its eventual result. Fails at once with `queue_full`, or with the
   * error the queue was closed with.
   */
  add(frame: SendFrameBody): Promise<SendResult> {
    if (this.#closed) return Promise.reject(this.#closed);
    if (this.#entries.length >= this.#capacity) {
      return Promise.reject(
        new NixMsgError("queue_full", `The send queue already holds ${this.#capacity} messages`),
      );
    }
    return new Promise<SendResult>((resolve, reject) => {
      this.#entries.push({
        frame,
        resolve,
        reject,
        rid: null,
        notBefore: 0,
        retry: null,
      });
    });
  }

  /**
   * The next send to publish under `rid`, or undefined when the window is full or nothing is
   * due. The caller serializes it with {@link frameFor}.
   */
  take(now: number, rid: () => string): { rid: string; frame: SendFrameBody } | undefined {
    if (this.#byRid.size >= this.#maxInFlight) return undefined;
    const e = this.#entries.find((x) => x.rid === null && x.notBefore <= now);
    if (!e) return undefined;
    e.rid = rid();
    this.#byRid.set(e.rid, e);
    return { rid: e.rid, frame: e.frame };
  }

  /** Earliest time a waiting send becomes due, when one waits for a retry; else undefined. */
  nextDueAt(now: number): number | undefined {
    let at: number | undefined;
    for (const e of this.#entries) {
      if (e.rid !== null || e.notBefore <= now) continue;
      at = at === undefined ? e.notBefore : Math.min(at, e.notBefore);
    }
    return at;
  }

  /** True when `rid` belongs to a send in flight. */
  has(rid: string): boolean {
    return this.#byRid.has(rid);
  }

  /**
   * Applies the `resp` of a send: success or a final error settles the call; `rate_limited`
   * puts the send back with a backoff delay (spec 9: not a failure).
   */
  settle(
    rid: string,
    resp: { ok: boolean; data?: unknown; error?: NixMsgError },
    now: number,
  ): SettleOutcome {
    const e = this.#byRid.get(rid);
    if (!e) return "unknown";
    this.#byRid.delete(rid);
    e.rid = null;
    if (!resp.ok && resp.error?.code === "rate_limited") {
      e.retry ??= new Backoff({ random: this.#random });
      e.notBefore = now + e.retry.next();
      return "retry";
    }
    this.#entries = this.#entries.filter((x) => x !== e);
    if (resp.ok) {
      const d = (resp.data ?? {}) as {
        id?: unknown;
        send_at_ms?: unknown;
        state?: unknown;
      };
      e.resolve({
        id: typeof d.id === "string" ? d.id : e.frame.id,
        sendAtMs: typeof d.send_at_ms === "number" ? d.send_at_ms : 0,
        state: (typeof d.state === "string" ? d.state : "dispatched") as SendResult["state"],
      });
    } else {
      e.reject(resp.error ?? new NixMsgError("bad_response", "Send failed without an error"));
    }
    return "done";
  }

  /** The connection is gone: sends in flight wait to be published again, unchanged. */
  requeueInFlight(): void {
    for (const e of this.#byRid.values()) e.rid = null;
    this.#byRid.clear();
  }

  /**
   * Ends the sends not published now (waiting for their turn or for a retry) with `error` and
   * refuses new ones with it; the ones in flight stay until their `resp` or {@link close}.
   */
  closeUnsent(error: NixMsgError): void {
    this.#closed ??= error;
    const unsent = this.#entries.filter((e) => e.rid === null);
    this.#entries = this.#entries.filter((e) => e.rid !== null);
    for (const e of unsent) e.reject(error);
  }

  /** Ends every held send with `error`, and refuses new ones with it (spec 9). */
  close(error: NixMsgError): void {
    this.#closed ??= error;
    const entries = this.#entries;
    this.#entries = [];
    this.#byRid.clear();
    for (const e of entries) e.reject(error);
  }
}

/** The wire frame of a queued send under `rid`: the same content on every publish. */
export function frameFor(rid: string, frame: SendFrameBody): Record<string, unknown> {
  return { v: 1, type: "send", rid, ...frame };
}
