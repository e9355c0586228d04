import { parseArgs, UsageError } from "./cli/args.ts";
import type { Command, Io } from "./cli/commands.ts";
import { addonFailureMessage, isAddonLoadError } from "./cli/self_check.ts";

const io: Io = { out: (l) => console.log(l), err: (l) => console.error(l) };

type Commands = Record<string, Command>;

/**
 * The commands pull in `@node-rs/argon2`, whose native addon is per platform. Loading them here
 * instead of with a static import lets a missing or foreign addon end in a clear message.
 */
async function loadCommands(): Promise<Commands | null> {
  try {
    return (await import("./cli/commands.ts")).commands;
  } catch (err) {
    if (!isAddonLoadError(err)) throw err;
    io.err(addonFailureMessage(err));
    return null;
  }
}

function topHelp(commands: Commands): string {
  const lines = ["Usage: nixmsg <command> [options]", "", "Commands:"];
  for (const cmd of Object.values(commands)) lines.push(`  ${cmd.usage.padEnd(40)} ${cmd.summary}`);
  lines.push(
    "",
    "Run `nixmsg <command> --help` for details. Config: NIXMSG_CONFIG (./config.yaml).",
  );
  return lines.join("\n");
}

function findCommand(commands: Commands, words: readonly string[]): Command | undefined {
  return commands[words.slice(0, 2).join(" ")] ?? commands[words[0] ?? ""];
}

/** The `nixmsg` command line (spec 11.2). Returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const commands = await loadCommands();
  if (!commands) return 1;
  try {
    const args = parseArgs(argv);
    if (args.positional.length === 0) {
      (args.flags.has("help") ? io.out : io.err)(topHelp(commands));
      return args.flags.has("help") ? 0 : 2;
    }
    const cmd = findCommand(commands, args.positional);
    if (!cmd) {
      io.err(`Unknown command: ${args.positional.join(" ")}\n\n${topHelp(commands)}`);
      return 2;
    }
    if (args.flags.has("help")) {
      io.out(`Usage: ${cmd.usage}\n\n${cmd.help}`);
      return 0;
    }
    return await cmd.run(args, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${topHelp(commands)}`);
      return 2;
    }
    throw err;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
