import type { Logger } from "../../log/log.ts";
import type { OpArgs, OpResult } from "../../store/op.ts";
import { OpError } from "../../store/op_error.ts";
import type { Ops } from "../../store/ops/mod.ts";
import type { Store } from "../../store/store.ts";

/** First pause after a failed attempt; it doubles up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;

/** What a {@linkcode Bookkeeping} needs of the app. */
export interface BookkeepingDeps {
  readonly store: Pick<Store, "run" | "closed">;
  readonly log: Logger;
}

/** Options of one {@linkcode Bookkeeping.commit}. */
export interface BookkeepingOptions<R> {
  /** Runs once, after the op committed. */
  onCommitted?: (result: R) => void;
  /** Log fields naming what is being recorded (never a body, password or token). */
  fields?: Record<string, string | number | boolean>;
}

/**
 * Runs the bookkeeping ops of the messaging runtime until they commit: the disconnect of a
 * connection, the unmark of a dropped push, an ack timeout (spec 7.5). Nobody waits on these, so
 * a single failed commit (a disk full for a moment) would otherwise leave a dead connection's
 * push marks in place until a restart: nothing pushed again, a message not kept never dropped,
 * its sender never told. Failed attempts are retried with a doubling pause (0.1 s up to 5 s).
 */
export class Bookkeeping {
  #deps: BookkeepingDeps;
  #timers = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;

  constructor(deps: BookkeepingDeps) {
    this.#deps = deps;
  }

  /** Retries waiting for their next attempt. */
  get waiting(): number {
    return this.#timers.size;
  }

  /**
   * Runs `op` until it commits. `args` is called before every attempt, so a retry records the
   * state as it is then; when it returns null the work is no longer needed and retrying stops.
   * Retrying also stops when the writer closes or `stop` is called (the next start's recovery
   * clears every mark, spec 7.8), and when the op refuses with its own error code (a retry would
   * be refused again).
   *
   * @example
   * ```ts
   * bookkeeping.commit("delivery.unmark", () => ref, { fields: { conn: ref.connCode } });
   * ```
   */
  commit<K extends keyof Ops & string>(
    op: K,
    args: () => OpArgs<Ops[K]> | null,
    opts: BookkeepingOptions<OpResult<Ops[K]>> = {},
  ): void {
    const { store: writer, log } = this.#deps;
    const fields = { op, ...opts.fields };
    let attempt = 0;
    const tryOnce = (): void => {
      if (this.#stopped || writer.closed) return;
      const a = args();
      if (a === null) return;
      attempt++;
      writer.run(op, a).then(
        (result) => {
          if (attempt > 1) log.info("bookkeeping committed after retries", { ...fields, attempt });
          opts.onCommitted?.(result);
        },
        (err: unknown) => {
          if (err instanceof OpError && err.code !== "busy") {
            log.error("bookkeeping refused", { ...fields, code: err.code });
            return;
          }
          if (this.#stopped || writer.closed) return;
          const wait = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1));
          const error = describe(err);
          if (attempt === 1) log.error("bookkeeping failed, retrying", { ...fields, error });
          else log.warn("bookkeeping retry failed", { ...fields, attempt, wait_ms: wait, error });
          const timer = setTimeout(() => {
            this.#timers.delete(timer);
            tryOnce();
          }, wait);
          this.#timers.add(timer);
        },
      );
    };
    tryOnce();
  }

  /** Cancels every pending retry (shutdown). */
  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }
}

function describe(err: unknown): string {
  const cause = (err as { cause?: unknown })?.cause;
  const message = err instanceof Error ? err.message : String(err);
  return typeof cause === "string" ? `${message}: ${cause}` : message;
}
