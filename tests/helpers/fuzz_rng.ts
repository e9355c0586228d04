// The seeded random source of the fuzz test: one seed reproduces every input.
import { seededRandom } from "../../server/protocol/fixtures.ts";

/** A seeded PRNG with the helpers the input generators need. */
export class Rng {
  readonly seed: number;
  #next: () => number;

  constructor(seed: number) {
    this.seed = seed;
    this.#next = seededRandom(seed);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.#next();
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.#next() * n);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.#next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** `n` random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }

  /** A length skewed towards small values, at most `max`. */
  size(max: number): number {
    return Math.min(max, Math.floor(max ** this.#next()) - 1 + this.int(2));
  }
}

/** The seed of this run: `NIXMSG_FUZZ_SEED` when set (to reproduce a failure), else a new one. */
export function fuzzSeed(): number {
  const fixed = Deno.env.get("NIXMSG_FUZZ_SEED");
  if (fixed !== undefined && fixed !== "") {
    const n = Number(fixed);
    if (!Number.isInteger(n)) throw new Error(`NIXMSG_FUZZ_SEED must be an integer: ${fixed}`);
    return n;
  }
  return Math.floor(Math.random() * 2 ** 31);
}

/** Concatenates byte arrays. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Applies 1-4 random byte mutations: flip, overwrite, insert, delete, truncate, duplicate. */
export function mutateBytes(rng: Rng, input: Uint8Array): Uint8Array {
  let b = Array.from(input);
  const rounds = 1 + rng.int(4);
  for (let r = 0; r < rounds; r++) {
    const at = b.length === 0 ? 0 : rng.int(b.length);
    switch (rng.int(7)) {
      case 0:
        if (b.length > 0) b[at] ^= 1 << rng.int(8);
        break;
      case 1:
        if (b.length > 0) b[at] = rng.pick([0x00, 0xff, 0x7f, 0x80, rng.int(256)]);
        break;
      case 2:
        b.splice(at, 0, ...rng.bytes(1 + rng.int(8)));
        break;
      case 3:
        b.splice(at, 1 + rng.int(4));
        break;
      case 4:
        b = b.slice(0, at);
        break;
      case 5:
        b = b.concat(b.slice(at));
        break;
      default:
        b.push(...rng.bytes(rng.int(32)));
    }
  }
  return new Uint8Array(b);
}

/** A short hex preview of bytes, for failure messages. */
export function hexPreview(bytes: Uint8Array, max = 48): string {
  const hex = Array.from(bytes.subarray(0, max), (x) => x.toString(16).padStart(2, "0")).join("");
  return bytes.length > max ? `${hex}… (${bytes.length} B)` : hex;
}
