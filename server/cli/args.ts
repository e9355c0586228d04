/** Parsed command-line arguments: positional words and `--flag` / `--key value` options. */
export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly flags: ReadonlySet<string>;
  readonly options: ReadonlyMap<string, string>;
}

/** Options that take a value; every other `--x` is a boolean flag. */
const VALUE_OPTIONS = new Set(["out", "listen", "to"]);

/**
 * Splits argv into positional words, boolean flags and valued options.
 *
 * @example
 * parseArgs(["backup", "--out", "b.db"]).options.get("out"); // "b.db"
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const flags = new Set<string>();
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h") {
      flags.add("help");
    } else if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
      if (eq > 0) options.set(name, arg.slice(eq + 1));
      else if (VALUE_OPTIONS.has(name)) {
        const value = argv[i + 1];
        if (value === undefined || value.startsWith("--")) {
          throw new UsageError(`Option --${name} needs a value`);
        }
        options.set(name, value);
        i++;
      } else flags.add(name);
    } else positional.push(arg);
  }
  return { positional, flags, options };
}

/** A command-line mistake; the CLI prints it with the usage text and exits 2. */
export class UsageError extends Error {}
