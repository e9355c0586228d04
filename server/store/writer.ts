import type { Logger } from "../log/log.ts";
import type { Synchronous } from "./db.ts";
import { fromWireError, type OpArgs, OpError, type OpRegistry, type OpResult } from "./op.ts";
import type { Ops } from "./ops/mod.ts";
import type { FromWorker, ToWorker, WireOp } from "./writer_protocol.ts";
import type { CommitInfo } from "./store.ts";

export { OpError } from "./op.ts";

/** Options of {@link Writer.start}. */
export interface WriterOptions {
  /** The database file; it must already be migrated. */
  path: string;
  /** spec 7.7: FULL unless configured otherwise. */
  synchronous?: Synchronous;
  /** Most ops per transaction (spec 7.2: 256). */
  maxBatch?: number;
  /**
   * Extra time an idle writer may wait, from the first queued op, to fill a batch (spec 7.2: at
   * most 2 ms). 0, the default, starts a commit at once; ops that arrive during a commit form the
   * next batch anyway (group commit).
   */
  maxWaitMs?: number;
  /** URL of a module exporting `ops`; the built-in registry when absent. For tests and benches. */
  opsModule?: string;
  /** The `now` passed to ops, read at enqueue time. */
  clock?: () => number;
  log?: Logger;
}

/** What {@link Writer.onCommit} listeners hear after every batch (declared with the store). */
export type { CommitInfo } from "./store.ts";

interface PendingOp {
  op: string;
  resolve: (value: unknown) => void;
  reject: (err: OpError) => void;
}

/**
 * The main-thread handle of the single writer (spec 7.2, DESIGN "The writer"). Ops run in a
 * Worker that owns the only write connection; `run` settles only after the COMMIT that holds
 * the op, or with `busy` when that COMMIT failed.
 *
 * @example
 * ```ts
 * const writer = await Writer.start({ path: "data/nixmsg.db" });
 * await writer.run("settings.set", { key: "registration_enabled", value: "true" });
 * await writer.close();
 * ```
 */
export class Writer<R extends OpRegistry = Ops> {
  #worker: Worker;
  #clock: () => number;
  #log: Logger | undefined;
  #pending = new Map<number, PendingOp>();
  #outbox: WireOp[] = [];
  /** When the oldest op of the outbox was queued (performance.now()). */
  #outboxSince = 0;
  /** Ops posted to the Worker and not yet answered: while any are, new ops wait in the outbox. */
  #inFlight = 0;
  #maxBatch: number;
  #maxWaitMs: number;
  #sendScheduled = false;
  #linger: ReturnType<typeof setTimeout> | undefined;
  #nextId = 1;
  #healthy = true;
  #commits = 0;
  #listeners = new Set<(info: CommitInfo) => void>();
  #closing = false;
  #dead = false;
  #closed: Promise<void> | undefined;
  #onClosed: (() => void) | undefined;

  private constructor(
    worker: Worker,
    limits: { maxBatch: number; maxWaitMs: number },
    clock: () => number,
    log: Logger | undefined,
  ) {
    this.#worker = worker;
    this.#maxBatch = limits.maxBatch;
    this.#maxWaitMs = limits.maxWaitMs;
    this.#clock = clock;
    this.#log = log;
    worker.onmessage = (event: MessageEvent<FromWorker>) => this.#receive(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#die(event.message);
    };
  }

  /** Starts the Worker, opens the write connection and resolves once it is ready. */
  static start<R extends OpRegistry = Ops>(opts: WriterOptions): Promise<Writer<R>> {
    const worker = new Worker(new URL("./writer_worker.ts", import.meta.url).href, {
      type: "module",
    });
    const limits = {
      maxBatch: Math.max(1, Math.floor(opts.maxBatch ?? 256)),
      maxWaitMs: Math.max(0, opts.maxWaitMs ?? 0),
    };
    const init: ToWorker = {
      type: "init",
      path: opts.path,
      synchronous: opts.synchronous ?? "FULL",
      maxBatch: limits.maxBatch,
      opsModule: opts.opsModule,
    };
    return new Promise((resolve, reject) => {
      const fail = (message: string) => {
        worker.terminate();
        reject(new Error(`Writer failed to start: ${message}`));
      };
      worker.onerror = (event) => {
        event.preventDefault();
        fail(event.message);
      };
      worker.onmessage = (event: MessageEvent<FromWorker>) => {
        if (event.data.type === "ready") {
          resolve(new Writer<R>(worker, limits, opts.clock ?? Date.now, opts.log));
        } else if (event.data.type === "init_error") {
          fail(event.data.message);
        }
      };
      worker.postMessage(init);
    });
  }

  /**
   * Queues one op. The promise resolves with the op's result after its batch is committed, or
   * rejects with an {@link OpError}: the op's own, or `busy` when the write failed.
   */
  run<K extends keyof R & string>(op: K, args: OpArgs<R[K]>): Promise<OpResult<R[K]>> {
    if (this.#closing || this.#dead) {
      return Promise.reject(new OpError("busy", undefined, "Writer is closed"));
    }
    const id = this.#nextId++;
    const now = this.#clock();
    return new Promise<OpResult<R[K]>>((resolve, reject) => {
      this.#pending.set(id, { op, resolve: resolve as (value: unknown) => void, reject });
      if (this.#outbox.length === 0) this.#outboxSince = performance.now();
      this.#outbox.push([id, op, args, now]);
      this.#schedule();
    });
  }

  /** Ops sent but not yet settled. */
  get queueLength(): number {
    return this.#pending.size;
  }

  /** False after a failed write until a later COMMIT succeeds (spec 7.8: /readyz fails). */
  get healthy(): boolean {
    return this.#healthy && !this.#dead;
  }

  /** True once `close` was called or the Worker died: `run` rejects from then on. */
  get closed(): boolean {
    return this.#closing || this.#dead;
  }

  /** Successful COMMITs so far. */
  get commits(): number {
    return this.#commits;
  }

  /** Calls `fn` after every batch; returns a function that removes it. */
  onCommit(fn: (info: CommitInfo) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Stops accepting ops, waits up to `drainMs` for the queued ones to commit (spec 7.8), rejects
   * what is left with `busy` and terminates the Worker.
   */
  close(drainMs = 10_000): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    this.#closing = true;
    clearTimeout(this.#linger);
    // The Worker commits messages in order: what is queued goes now, ahead of `close`.
    this.#send();
    this.#closed = new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.#onClosed = undefined;
        this.#worker.terminate();
        this.#dead = true;
        this.#rejectAll("Writer closed before the op was committed");
        resolve();
      };
      const timer = setTimeout(finish, this.#dead ? 0 : drainMs);
      this.#onClosed = finish;
      if (!this.#dead) this.#worker.postMessage({ type: "close" } satisfies ToWorker);
    });
    return this.#closed;
  }

  /**
   * Group commit (DESIGN verified item 12): an idle writer sends what is queued at the end of the
   * current tick, so an op alone costs one commit; while a message is being committed, new ops
   * wait here and go together when it is answered.
   */
  #schedule(): void {
    if (this.#sendScheduled || this.#inFlight > 0) return;
    if (this.#linger !== undefined && this.#outbox.length < this.#maxBatch) return;
    this.#sendScheduled = true;
    queueMicrotask(() => {
      this.#sendScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#inFlight > 0 || this.#outbox.length === 0 || this.#closing || this.#dead) return;
    if (this.#maxWaitMs > 0 && this.#outbox.length < this.#maxBatch) {
      const left = this.#outboxSince + this.#maxWaitMs - performance.now();
      if (left > 0) {
        this.#linger ??= setTimeout(() => {
          this.#linger = undefined;
          this.#flush();
        }, left);
        return;
      }
    }
    clearTimeout(this.#linger);
    this.#linger = undefined;
    this.#send();
  }

  #send(): void {
    if (this.#outbox.length === 0 || this.#dead) return;
    const items = this.#outbox;
    this.#outbox = [];
    try {
      this.#worker.postMessage({ type: "ops", items } satisfies ToWorker);
      this.#inFlight += items.length;
    } catch {
      // Some args cannot be cloned. Send the rest; fail only those ops.
      const good = items.filter((item) => {
        try {
          structuredClone(item[2]);
          return true;
        } catch (err) {
          this.#settleError(item[0], `Args are not cloneable: ${messageOf(err)}`);
          return false;
        }
      });
      try {
        if (good.length > 0) this.#worker.postMessage({ type: "ops", items: good });
        this.#inFlight += good.length;
      } catch (err) {
        for (const item of good) this.#settleError(item[0], messageOf(err));
      }
    }
  }

  #receive(msg: FromWorker): void {
    if (msg.type === "closed") {
      this.#onClosed?.();
      return;
    }
    if (msg.type !== "batch") return;
    this.#inFlight -= msg.ok ? msg.results.length : msg.ids.length;
    if (msg.ok) {
      this.#commits++;
      this.#healthy = true;
      for (const [id, ok, value] of msg.results) {
        const entry = this.#pending.get(id);
        if (entry === undefined) continue;
        this.#pending.delete(id);
        if (ok) entry.resolve(value);
        else entry.reject(fromWireError(value, entry.op));
      }
    } else {
      // spec 7.8: a failed write answers busy and fails readiness until a commit succeeds.
      this.#healthy = false;
      this.#log?.error("Write batch failed", { ops: msg.ids.length, error: msg.error });
      for (const id of msg.ids) this.#settleError(id, msg.error);
    }
    const info: CommitInfo = {
      ops: msg.ok ? msg.results.length : msg.ids.length,
      ms: msg.ms,
      ok: msg.ok,
    };
    for (const fn of this.#listeners) {
      try {
        fn(info);
      } catch (err) {
        // A metrics hook must not break the settling of later batches.
        this.#log?.error("Commit listener failed", { error: messageOf(err) });
      }
    }
    // The ops queued during this commit (and those its callers queue now) form the next batch.
    if (this.#outbox.length > 0) this.#schedule();
  }

  #settleError(id: number, cause: string): void {
    const entry = this.#pending.get(id);
    if (entry === undefined) return;
    this.#pending.delete(id);
    entry.reject(new OpError("busy", undefined, `Op ${entry.op} was not committed`, { cause }));
  }

  #rejectAll(cause: string): void {
    for (const id of [...this.#pending.keys()]) this.#settleError(id, cause);
  }

  #die(message: string): void {
    this.#log?.error("Writer worker crashed", { error: message });
    this.#dead = true;
    clearTimeout(this.#linger);
    this.#worker.terminate();
    this.#rejectAll(message);
    this.#onClosed?.();
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
