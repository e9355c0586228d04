/**
 * The soft open-files limit (RLIMIT_NOFILE) of this process, read with `getrlimit` from the C
 * library over FFI. Deno refuses `/proc/self/limits` unless it has `--allow-all`; the shipped
 * permissions grant FFI (for the argon2 addon), which reaches `getrlimit` directly
 * (docs/operations.md, "Permissions").
 */

/** What {@linkcode readOpenFilesLimit} found. */
export interface OpenFilesLimit {
  /** The soft limit; null when unlimited, when the platform has none, or when it failed. */
  readonly soft: number | null;
  /** Why it could not be read, for a warning; null when it was read (or does not apply). */
  readonly problem: string | null;
}

/** The C library and `RLIMIT_NOFILE` per OS (both Linux x86_64 and arm64 use 7). */
const PLATFORMS: Partial<Record<typeof Deno.build.os, { lib: string; resource: number }>> = {
  linux: { lib: "libc.so.6", resource: 7 },
  darwin: { lib: "libSystem.B.dylib", resource: 8 },
};

/** `RLIM_INFINITY`: all bits set in a 64-bit `rlim_t`. */
const RLIM_INFINITY = 0xffff_ffff_ffff_ffffn;

/**
 * Reads the soft open-files limit. Windows has no such limit: `{ soft: null, problem: null }`.
 *
 * @example
 * readOpenFilesLimit(); // { soft: 1024, problem: null } under `ulimit -n 1024`
 */
export function readOpenFilesLimit(): OpenFilesLimit {
  const platform = PLATFORMS[Deno.build.os];
  if (platform === undefined) return { soft: null, problem: null };
  let lib: Deno.DynamicLibrary<{ getrlimit: { parameters: ["i32", "buffer"]; result: "i32" } }>;
  try {
    lib = Deno.dlopen(platform.lib, {
      getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    });
  } catch (err) {
    return { soft: null, problem: `cannot load ${platform.lib}: ${(err as Error).message}` };
  }
  try {
    // struct rlimit { rlim_t rlim_cur; rlim_t rlim_max; } with a 64-bit rlim_t.
    const limits = new BigUint64Array(2);
    if (lib.symbols.getrlimit(platform.resource, new Uint8Array(limits.buffer)) !== 0) {
      return { soft: null, problem: "getrlimit(RLIMIT_NOFILE) failed" };
    }
    const soft = limits[0];
    return { soft: soft === RLIM_INFINITY ? null : Number(soft), problem: null };
  } finally {
    lib.close();
  }
}
