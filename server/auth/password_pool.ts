import { type Algorithm, hash, parseOptions, verify, type Version } from "@node-rs/argon2";

/** Argon2id cost parameters that vary; parallelism is always 1 (spec 12). */
export interface Argon2Params {
  /** Memory in KiB (`m=` in the PHC string). */
  readonly memoryCost: number;
  /** Passes (`t=` in the PHC string). */
  readonly timeCost: number;
}

/** Options for {@linkcode PasswordPool}. */
export interface PasswordPoolOptions {
  /** Most argon2 computations at once; defaults to the CPU count (spec 12). */
  size?: number;
  /** Cost parameters; defaults to {@linkcode DEFAULT_ARGON2_PARAMS}. Tests may lower them. */
  params?: Argon2Params;
  /**
   * Most checks with an owner (an unauthenticated caller's address) that may wait for a slot;
   * more are refused at once with {@linkcode PoolBusyError} (issue 28). Default: unbounded.
   */
  maxQueued?: number;
  /**
   * Most checks of one owner that may wait for a slot once the queue is half full; below that an
   * owner may borrow beyond it. Default: unbounded.
   */
  maxQueuedPerOwner?: number;
}

/**
 * A password check refused without running because the queue for the pool is full, or the
 * caller's address already has its share waiting (issue 28). Callers answer `busy`.
 */
export class PoolBusyError extends Error {
  constructor(reason: "queue_full" | "owner_share") {
    super(
      `Password check refused: ${reason === "queue_full" ? "queue full" : "address share used"}`,
    );
    this.name = "PoolBusyError";
  }
}

/** The OWASP minimum the spec requires: m=19 MiB, t=2, p=1 (spec 12). */
export const DEFAULT_ARGON2_PARAMS: Argon2Params = Object.freeze({
  memoryCost: 19456,
  timeCost: 2,
});

// `Algorithm` is a const enum in the package's typings and has no runtime value under Deno, so
// the numeric members are written out: Argon2d = 0, Argon2i = 1, Argon2id = 2; V0x13 = 1.
const ARGON2ID = 2 as Algorithm;
const V0X13 = 1 as Version;
const PARALLELISM = 1;

/**
 * Argon2id hashing behind a FIFO concurrency pool (spec 12). Each computation holds about
 * `memoryCost` KiB, so the pool size bounds peak memory; callers beyond it wait in line.
 *
 * @example
 * ```ts
 * const pool = new PasswordPool();
 * const phc = await pool.hash("correct horse");
 * if (await pool.verify(phc, "correct horse") && pool.needsRehash(phc)) {
 *   // store await pool.hash("correct horse")
 * }
 * ```
 */
export class PasswordPool {
  #size: number;
  #params: Argon2Params;
  #active = 0;
  #waiting: Array<{ owner: string; run: () => void }> = [];
  /** Checks running now per owner ("" for work without one), for the fair pick. */
  #running = new Map<string, number>();
  #maxQueued: number;
  #maxPerOwner: number;
  /** Checks with an owner waiting now (bounded, issue 28), and how many per owner. */
  #ownedWaiting = 0;
  #byOwner = new Map<string, number>();
  #verifications = 0;
  #dummy: Promise<string> | null = null;

  constructor(opts: PasswordPoolOptions = {}) {
    const size = opts.size ?? navigator.hardwareConcurrency ?? 1;
    if (!Number.isInteger(size) || size < 1) {
      throw new RangeError(`Cannot create password pool: size ${size} is not a positive integer`);
    }
    const params = opts.params ?? DEFAULT_ARGON2_PARAMS;
    if (!isPositiveInteger(params.memoryCost) || !isPositiveInteger(params.timeCost)) {
      throw new RangeError("Cannot create password pool: argon2 costs must be positive integers");
    }
    this.#size = size;
    this.#maxQueued = opts.maxQueued ?? Infinity;
    this.#maxPerOwner = opts.maxQueuedPerOwner ?? Infinity;
    this.#params = { memoryCost: params.memoryCost, timeCost: params.timeCost };
  }

  /** Computations waiting for a slot, for metrics. */
  get queued(): number {
    return this.#waiting.length;
  }

  /** Computations running now; never more than the pool size. */
  get active(): number {
    return this.#active;
  }

  /** argon2 verifications run since start (a malformed hash runs none); for metrics and tests. */
  get verifications(): number {
    return this.#verifications;
  }

  /** Hashes `password` with the current parameters and returns a PHC string. */
  hash(password: string): Promise<string> {
    return this.#run(() =>
      hash(password, {
        algorithm: ARGON2ID,
        memoryCost: this.#params.memoryCost,
        timeCost: this.#params.timeCost,
        parallelism: PARALLELISM,
      })
    );
  }

  /**
   * Checks `password` against a stored PHC string in constant time. A malformed or
   * unsupported hash yields false instead of throwing.
   *
   * With an `owner` (the address group of an unauthenticated caller) the check waits only when
   * the queue has room and the owner has its share left; otherwise it rejects at once with
   * {@linkcode PoolBusyError} (issue 28: a flood of guesses must not delay every login).
   */
  async verify(phc: string, password: string, owner?: string): Promise<boolean> {
    if (!phc.startsWith("$argon2")) return false;
    const leave = this.#enterQueue(owner);
    try {
      return await this.#run(
        () => {
          this.#verifications++;
          return verify(phc, password);
        },
        leave,
        owner,
      );
    } catch {
      return false;
    }
  }

  /** Reserves a place in the bounded queue for `owner`, or throws; returns how to give it back. */
  #enterQueue(owner: string | undefined): (() => void) | null {
    if (owner === undefined || this.#active < this.#size) return null;
    if (this.#ownedWaiting >= this.#maxQueued) throw new PoolBusyError("queue_full");
    const n = this.#byOwner.get(owner) ?? 0;
    // An owner past its share may borrow while the queue is less than half full, so one
    // address's burst of logins is not refused on an idle server; it never gets the last half.
    if (n >= this.#maxPerOwner && this.#ownedWaiting >= this.#maxQueued / 2) {
      throw new PoolBusyError("owner_share");
    }
    this.#ownedWaiting++;
    this.#byOwner.set(owner, n + 1);
    return () => {
      this.#ownedWaiting--;
      const left = (this.#byOwner.get(owner) ?? 1) - 1;
      if (left <= 0) this.#byOwner.delete(owner);
      else this.#byOwner.set(owner, left);
    };
  }

  /**
   * A fixed hash of a random secret with the current parameters, made once. Checking a password
   * against it costs what checking a real one costs (issue 18: unknown ids must not answer
   * faster than known ones).
   */
  dummyHash(): Promise<string> {
    this.#dummy ??= this.hash(crypto.randomUUID());
    return this.#dummy;
  }

  /**
   * Runs one argon2 check of `password` against {@linkcode dummyHash} and returns false. Use it
   * where no real hash exists (unknown or disabled id), so the answer takes as long as a wrong
   * password for a real one.
   */
  async verifyDummy(password: string, owner?: string): Promise<false> {
    const phc = this.#dummy === null ? await this.dummyHash() : await this.#dummy;
    await this.verify(phc, password, owner);
    return false;
  }

  /**
   * Whether a stored hash was made with other parameters than the current ones, so it should be
   * replaced after the next successful verify (spec 12). A malformed hash also needs a rehash.
   */
  needsRehash(phc: string): boolean {
    try {
      const o = parseOptions(phc);
      return o.algorithm !== ARGON2ID || o.version !== V0X13 ||
        o.memoryCost !== this.#params.memoryCost ||
        o.timeCost !== this.#params.timeCost || o.parallelism !== PARALLELISM;
    } catch {
      return true;
    }
  }

  async #run<T>(
    work: () => Promise<T>,
    leaveQueue: (() => void) | null = null,
    owner = "",
  ): Promise<T> {
    try {
      await this.#acquire(owner);
    } finally {
      leaveQueue?.();
    }
    this.#running.set(owner, (this.#running.get(owner) ?? 0) + 1);
    try {
      return await work();
    } finally {
      // The slot is handed on while this owner still counts as running, so it goes elsewhere.
      this.#release();
      const left = (this.#running.get(owner) ?? 1) - 1;
      if (left <= 0) this.#running.delete(owner);
      else this.#running.set(owner, left);
    }
  }

  #acquire(owner: string): Promise<void> {
    if (this.#active < this.#size) {
      this.#active++;
      return Promise.resolve();
    }
    return new Promise((run) => this.#waiting.push({ owner, run }));
  }

  #release(): void {
    // issue 28: the slot goes to the first waiter whose owner has nothing running, else to the
    // first waiter; so an address that keeps the pool busy delays another by one check at most.
    let i = this.#waiting.findIndex((w) => !this.#running.has(w.owner));
    if (i < 0) i = 0;
    const next = this.#waiting.splice(i, 1)[0];
    // The slot passes straight to the next waiter, so `active` never dips and rises again.
    if (next) next.run();
    else this.#active--;
  }
}

function isPositiveInteger(n: number): boolean {
  return Number.isInteger(n) && n > 0;
}
