/**
 * The Deno flags of the shipped server (its permissions and `--v8-flags=--expose-gc`), read from
 * `server/deno_permissions.txt`, the one list that `./nixmsg`, `deno task compile`,
 * `scripts/release.ts` and the test helpers use.
 *
 * @example
 * ```ts
 * new Deno.Command(Deno.execPath(), { args: ["run", ...DENO_PERMISSIONS, "server/main.ts"] });
 * ```
 * @module
 */

/** Where the list lives, relative to the repository root. */
export const DENO_PERMISSIONS_FILE = "server/deno_permissions.txt";

/** Parses the list: one flag per line; blank lines and `#` comments are skipped. */
export function parseDenoPermissions(text: string): string[] {
  const flags = text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  for (const f of flags) {
    if (!/^--[a-z0-9-]+(=\S+)?$/.test(f)) {
      throw new Error(`Not a Deno flag in ${DENO_PERMISSIONS_FILE}: ${f}`);
    }
  }
  return flags;
}

/** The shipped permission flags, in file order. */
export const DENO_PERMISSIONS: readonly string[] = Object.freeze(
  parseDenoPermissions(
    Deno.readTextFileSync(new URL(`../${DENO_PERMISSIONS_FILE}`, import.meta.url)),
  ),
);
