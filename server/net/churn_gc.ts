/**
 * Memory under connection churn (issue 28): every TCP connection costs the runtime read buffers
 * of up to 64 KiB, held by ArrayBuffers that die with the connection but are freed only by V8's
 * next full GC, which starts once about 64 MiB of such external memory has piled up. Under a
 * flood of short connections (failed logins, a reconnect storm) that pile sits in RSS.
 *
 * Two settings keep it small, both set at start by {@linkcode tuneMemory}:
 * - glibc's mmap threshold is fixed at 32 KiB, so those buffers are mapped on their own and given
 *   back to the system when freed, instead of fragmenting the main heap (which cannot shrink past
 *   a live block);
 * - {@linkcode ChurnGc} runs a full GC after every {@linkcode CHURN_GC_EVERY} closed connections,
 *   at most once per {@linkcode CHURN_GC_MIN_INTERVAL_MS}, and a second after a burst's tail, when the
 *   runtime exposes `gc` (the shipped flags pass `--v8-flags=--expose-gc`,
 *   server/deno_permissions.txt).
 *
 * Measured in docs/RELIABILITY.md, "A cold server's RSS under connection churn".
 *
 * Growth (issue 33): while many clients log in, V8 lets its heap grow to about twice what is
 * live before a full GC, so right after a login storm a third of the RSS was garbage of the
 * handshakes (measured with tests/bench/idle_heap.ts: 38 KiB per connection before a full GC,
 * 21 KiB after). {@linkcode ChurnGc} also runs a full GC each time the open connections have
 * grown by {@linkcode GROWTH_GC_SHARE} since the last GC (at least {@linkcode GROWTH_GC_MIN}), and
 * after the tail of such a burst. A GC costs about what is live, and the steps are geometric, so
 * all of them together cost a few full GCs of the final heap.
 */

/** A full GC after this many closed connections: about 16 MiB of 64 KiB read buffers. */
export const CHURN_GC_EVERY = 256;
/** At most one churn GC per this many milliseconds. */
export const CHURN_GC_MIN_INTERVAL_MS = 200;
/**
 * The tail of a burst: this long after a close, a full GC runs if at least
 * {@linkcode CHURN_GC_IDLE_MIN} connections closed since the last one (about 4 MiB of buffers);
 * fewer wait for later closes. A trickle of closes costs at most one GC per 64 of them.
 */
export const CHURN_GC_IDLE_MS = 1000;
/** See {@linkcode CHURN_GC_IDLE_MS}. */
export const CHURN_GC_IDLE_MIN = 64;
/** A full GC once the open connections grew by this share of those open at the last GC… */
export const GROWTH_GC_SHARE = 1 / 4;
/** …and by at least this many. */
export const GROWTH_GC_MIN = 256;
/** glibc's `M_MMAP_THRESHOLD` parameter of `mallopt`. */
const M_MMAP_THRESHOLD = -3;
/** Allocations at least this large are mapped on their own (glibc's default is 128 KiB, adaptive). */
export const MMAP_THRESHOLD_BYTES = 32 * 1024;

/** What {@linkcode tuneMemory} did, for the start-up log. */
export interface MemoryTuning {
  /** The fixed mmap threshold in bytes; null when not set (not glibc, or it failed). */
  mmapThreshold: number | null;
  /** True when the runtime exposes `gc`, so {@linkcode ChurnGc} runs. */
  churnGc: boolean;
  /** Why the mmap threshold was not set, for a debug line; null when set or not applicable. */
  problem: string | null;
}

/** The full-GC function V8 exposes with `--expose-gc`, or null. */
export function exposedGc(): (() => void) | null {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? () => (gc as () => void)() : null;
}

/**
 * Fixes glibc's mmap threshold (Linux only) and reports whether churn GCs can run.
 *
 * @example
 * const t = tuneMemory(); // { mmapThreshold: 32768, churnGc: true, problem: null }
 */
export function tuneMemory(): MemoryTuning {
  const churnGc = exposedGc() !== null;
  if (Deno.build.os !== "linux") return { mmapThreshold: null, churnGc, problem: null };
  let lib: Deno.DynamicLibrary<{
    mallopt: { parameters: ["i32", "i32"]; result: "i32" };
    gnu_get_libc_version: { parameters: []; result: "pointer" };
  }>;
  try {
    // gnu_get_libc_version exists only in glibc: elsewhere (musl) mallopt does nothing useful.
    lib = Deno.dlopen("libc.so.6", {
      mallopt: { parameters: ["i32", "i32"], result: "i32" },
      gnu_get_libc_version: { parameters: [], result: "pointer" },
    });
  } catch (err) {
    return { mmapThreshold: null, churnGc, problem: `not glibc: ${(err as Error).message}` };
  }
  try {
    const ok = lib.symbols.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) === 1;
    return ok
      ? { mmapThreshold: MMAP_THRESHOLD_BYTES, churnGc, problem: null }
      : { mmapThreshold: null, churnGc, problem: "mallopt(M_MMAP_THRESHOLD) failed" };
  } finally {
    lib.close();
  }
}

/**
 * Counts closed connections and runs a full GC after every `every` of them, at most once per
 * `minIntervalMs`, and `idleMs` after a close when at least `idleMin` closed since the last GC
 * (the tail of a burst would otherwise wait for V8's own full GC). Counts open connections too:
 * a full GC when they grew by `growthShare` (at least `growthMin`) since the last GC, at most once
 * per `minIntervalMs`, and `idleMs` after an open when they grew by at least `idleMin`.
 *
 * @example
 * const churn = new ChurnGc();
 * churn.opened();
 * socket.once("close", () => churn.closed());
 */
export class ChurnGc {
  readonly #gc: (() => void) | null;
  readonly #every: number;
  readonly #minIntervalMs: number;
  readonly #idleMs: number;
  readonly #idleMin: number;
  readonly #now: () => number;
  readonly #onRun: (() => void) | undefined;
  readonly #growthShare: number;
  readonly #growthMin: number;
  #count = 0;
  /** Connections open now, and the most open at a GC since the last quiet moment. */
  #open = 0;
  #openAtGc = 0;
  #last = -Infinity;
  /** When a connection last opened or closed. */
  #lastEvent = -Infinity;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** How many GCs this has run. */
  runs = 0;

  constructor(opts: {
    gc?: (() => void) | null;
    every?: number;
    minIntervalMs?: number;
    idleMs?: number;
    idleMin?: number;
    now?: () => number;
    /** Called after each GC (the server counts them in `nixmsg_churn_gc_total`). */
    onRun?: () => void;
    growthShare?: number;
    growthMin?: number;
  } = {}) {
    this.#gc = opts.gc === undefined ? exposedGc() : opts.gc;
    this.#every = opts.every ?? CHURN_GC_EVERY;
    this.#minIntervalMs = opts.minIntervalMs ?? CHURN_GC_MIN_INTERVAL_MS;
    this.#idleMs = opts.idleMs ?? CHURN_GC_IDLE_MS;
    this.#idleMin = opts.idleMin ?? CHURN_GC_IDLE_MIN;
    this.#now = opts.now ?? (() => performance.now());
    this.#onRun = opts.onRun;
    this.#growthShare = opts.growthShare ?? GROWTH_GC_SHARE;
    this.#growthMin = opts.growthMin ?? GROWTH_GC_MIN;
  }

  /** A connection opened (call {@linkcode closed} when it closes). */
  opened(): void {
    if (this.#gc === null) return;
    this.#open++;
    this.#lastEvent = this.#now();
    const grown = this.#open - this.#openAtGc;
    if (
      grown >= Math.max(this.#growthMin, this.#openAtGc * this.#growthShare) &&
      this.#now() - this.#last >= this.#minIntervalMs
    ) {
      return this.#run();
    }
    this.#armIdle();
  }

  /** A connection closed. */
  closed(): void {
    if (this.#gc === null) return;
    this.#count++;
    this.#open = Math.max(0, this.#open - 1);
    this.#lastEvent = this.#now();
    if (this.#count >= this.#every && this.#now() - this.#last >= this.#minIntervalMs) {
      return this.#run();
    }
    this.#armIdle();
  }

  #armIdle(delay = this.#idleMs): void {
    if (this.#idle !== undefined) return;
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      // Closed connections' buffers are collected `idleMs` after the first close, as before. A
      // GC for growth alone waits until the burst is over (`idleMs` without an open or a close):
      // under a steady stream of logins a GC every `idleMs` stalled the main thread 100-250 ms
      // each time.
      const quietIn = this.#lastEvent + this.#idleMs - this.#now();
      if (quietIn > 0 && this.#count < this.#idleMin) return this.#armIdle(quietIn);
      const grown = this.#open - this.#openAtGc;
      if (this.#count >= this.#idleMin || grown >= this.#idleMin) this.#run();
      // Quiet now: when fewer are open than at the last GC, growth counts from what is open.
      this.#openAtGc = Math.min(this.#openAtGc, this.#open);
    }, delay);
    Deno.unrefTimer(this.#idle);
  }

  /** Stops the pending idle GC. */
  close(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
  }

  #run(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    this.#count = 0;
    // The most open at a GC until the next quiet moment: under churn at a steady level (a flood
    // of connections cut and reopened) the close count runs the GCs, not the reopening.
    this.#openAtGc = Math.max(this.#openAtGc, this.#open);
    this.#last = this.#now();
    this.runs++;
    this.#gc!();
    this.#onRun?.();
  }
}
