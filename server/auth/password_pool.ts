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
  #waiting: Array<() => void> = [];
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
   */
  async verify(phc: string, password: string): Promise<boolean> {
    if (!phc.startsWith("$argon2")) return false;
    try {
      return await this.#run(() => {
        this.#verifications++;
        return verify(phc, password);
      });
    } catch {
      return false;
    }
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
  async verifyDummy(password: string): Promise<false> {
    await this.verify(await this.dummyHash(), password);
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

  async #run<T>(work: () => Promise<T>): Promise<T> {
    await this.#acquire();
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  #acquire(): Promise<void> {
    if (this.#active < this.#size) {
      this.#active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    // The slot passes straight to the next waiter, so `active` never dips and rises again.
    if (next) next();
    else this.#active--;
  }
}

function isPositiveInteger(n: number): boolean {
  return Number.isInteger(n) && n > 0;
}
