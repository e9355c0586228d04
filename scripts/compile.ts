/**
 * `deno task compile`: builds `dist/nixmsg` for this machine with the shipped permissions
 * (`server/deno_permissions.txt`) and the files of {@linkcode INCLUDES}. A task line cannot read a
 * file, hence this script. `deno task release` builds every release target the same way.
 *
 * Usage: deno task compile
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DENO_PERMISSIONS } from "./deno_permissions.ts";
import { INCLUDES } from "./release.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The `deno compile` arguments for `output`. */
export function compileArgs(output: string): string[] {
  return [
    "compile",
    "--frozen",
    ...DENO_PERMISSIONS,
    ...INCLUDES.flatMap((i) => ["--include", i]),
    "--output",
    output,
    "server/main.ts",
  ];
}

if (import.meta.main) {
  const status = await new Deno.Command(Deno.execPath(), {
    args: compileArgs("dist/nixmsg"),
    cwd: ROOT,
    stdin: "null",
  }).spawn().status;
  Deno.exit(status.code);
}
