import { join } from "node:path";
import { stringify } from "yaml";
import { DENO_PERMISSIONS } from "../../scripts/deno_permissions.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAIN = join(ROOT, "server/main.ts");
/** The `./nixmsg` launcher of this checkout. */
export const LAUNCHER = join(ROOT, "nixmsg");

/** Result of one CLI invocation. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A scratch directory with a config.yaml for one test; `data_dir` lives inside it. */
export interface TestHome {
  dir: string;
  configPath: string;
  dataDir: string;
  env: Record<string, string>;
  /** The source tree to run (default: this repository); tests of a relocated tree set it. */
  root?: string;
  cleanup(): Promise<void>;
}

/** Creates a temp dir with a config listening on 127.0.0.1:0 plus `overrides` (YAML keys). */
export async function makeTestHome(overrides: Record<string, unknown> = {}): Promise<TestHome> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-test-" });
  const dataDir = join(dir, "data");
  const configPath = join(dir, "config.yaml");
  const config = { listen: "127.0.0.1:0", data_dir: dataDir, log: { level: "info" }, ...overrides };
  await Deno.writeTextFile(configPath, stringify(config));
  return {
    dir,
    configPath,
    dataDir,
    env: { NIXMSG_CONFIG: configPath },
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * The `deno` arguments that run `script` with `args` as the shipped command does: the permissions
 * of `server/deno_permissions.txt` and the checkout's deno.json. Every test that starts the server
 * or a CLI command uses these (tests/permissions_test.ts checks it).
 */
export function shippedDenoArgs(root: string, script: string, args: readonly string[]): string[] {
  return [
    "run",
    "--quiet",
    ...DENO_PERMISSIONS,
    "--config",
    join(root, "deno.json"),
    script,
    ...args,
  ];
}

/** The `deno` arguments of `nixmsg <args>` in `home` (its source tree, by default this one). */
export function cliArgs(home: TestHome, args: readonly string[]): string[] {
  const root = home.root ?? ROOT;
  const main = home.root === undefined ? MAIN : join(root, "server/main.ts");
  return shippedDenoArgs(root, main, args);
}

/** Options of {@linkcode runCli}. */
export interface RunCliOptions {
  /** Runs the command through `./nixmsg`, as a user of a checkout does, instead of `deno run`. */
  launcher?: boolean;
}

/** Runs `nixmsg <args>` as a real process and collects its output. */
export async function runCli(
  home: TestHome,
  args: readonly string[],
  stdin?: string,
  opts: RunCliOptions = {},
): Promise<CliResult> {
  const cmd = new Deno.Command(opts.launcher ? "bash" : Deno.execPath(), {
    args: opts.launcher ? [LAUNCHER, ...args] : cliArgs(home, args),
    env: home.env,
    cwd: home.dir,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A `nixmsg serve` child process. */
export interface ServerProcess {
  /** "127.0.0.1:port" from <data_dir>/listen.addr. */
  addr: string;
  port: number;
  /** Log lines (parsed JSON) seen so far. */
  logs: Record<string, unknown>[];
  /** The process id (of the wrapper, which execs the server, when `wrap` is used). */
  pid: number;
  /** Settles when the process ends, however it ends (a crash too). */
  exited: Promise<Deno.CommandStatus>;
  /** What the process wrote to stderr so far (an uncaught error lands here). */
  stderr(): string;
  /** SIGTERM and wait; returns the exit code. */
  stop(): Promise<number>;
  /** SIGKILL and wait (crash tests). */
  kill(): Promise<void>;
}

/** Options of {@linkcode startServerProcess}. */
export interface StartOptions {
  /** Runs this script instead of `server/main.ts serve` (e.g. `serve_test_pool.ts`). */
  entry?: string;
  /** Extra environment of this process only (e.g. `NIXMSG_TEST_CRASH_AT`). */
  env?: Record<string, string>;
  /** Runs the server under another command, e.g. `["prlimit", "--nofile=256:256"]`. */
  wrap?: readonly string[];
  /** Starts it with `./nixmsg serve`, as a user of a checkout does (not with `entry`). */
  launcher?: boolean;
}

/**
 * Starts `nixmsg serve` and resolves once it logs "nixmsg serving" (then listen.addr exists).
 * Rejects with the process output when it exits first or does not start within `timeoutMs`.
 */
export async function startServerProcess(
  home: TestHome,
  timeoutMs = 30_000,
  opts: StartOptions = {},
): Promise<ServerProcess> {
  // `entry` is a test stand-in for `serve`; it runs under the shipped permissions all the same.
  const [program, args] = opts.launcher ? ["bash", [LAUNCHER, "serve"]] : [
    Deno.execPath(),
    opts.entry === undefined ? cliArgs(home, ["serve"]) : shippedDenoArgs(ROOT, opts.entry, []),
  ];
  const wrap = opts.wrap ?? [];
  const command = wrap.length > 0 ? wrap[0] : program;
  const child = new Deno.Command(command, {
    args: wrap.length > 0 ? [...wrap.slice(1), program, ...args] : args,
    env: { ...home.env, ...opts.env },
    cwd: home.dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logs: Record<string, unknown>[] = [];
  let stderr = "";
  const errDone = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  let onServing: () => void = () => {};
  const serving = new Promise<void>((r) => (onServing = r));
  const outDone = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const rec = JSON.parse(line) as Record<string, unknown>;
          logs.push(rec);
          if (rec.msg === "nixmsg serving") onServing();
        } catch {
          logs.push({ raw: line });
        }
      }
    }
  })();
  const status = child.status;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    serving.then(() => "serving" as const),
    status.then(() => "exited" as const),
    new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), timeoutMs))),
  ]);
  clearTimeout(timer);
  const finish = async () => {
    await status;
    await Promise.all([outDone, errDone]);
  };
  if (outcome !== "serving") {
    if (outcome === "timeout") child.kill("SIGKILL");
    await finish();
    throw new Error(`Server did not start (${outcome}):\n${stderr}\n${JSON.stringify(logs)}`);
  }
  const addr = (await Deno.readTextFile(join(home.dataDir, "listen.addr"))).trim();
  return {
    addr,
    port: Number(addr.slice(addr.lastIndexOf(":") + 1)),
    logs,
    pid: child.pid,
    exited: status,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const s = await status;
      await finish();
      return s.code;
    },
    async kill() {
      try {
        child.kill("SIGKILL");
      } catch (err) {
        if (!(err instanceof TypeError)) throw err; // it has already exited (a crash point)
      }
      await finish();
    },
  };
}
