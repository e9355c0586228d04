/**
 * Starts `sdk/conformance/harness.ts` (a fresh real server) for a test file and talks to it over
 * its JSON-line stdin/stdout protocol.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface, type Interface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (sdk/ts/test/helpers -> ../../../..; also from .test-build). */
export const REPO_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

function findRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, "sdk/conformance/harness.ts"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("Cannot find the repository root");
    dir = up;
  }
  return dir;
}

/** The SDK package root (sdk/ts), from the sources or from dist/test-build. */
export const SDK_ROOT = join(REPO_ROOT, "sdk/ts");

/** The Deno binary: $DENO, `deno` on PATH, or the repository's .tools copy. */
export function denoPath(): string {
  if (process.env.DENO) return process.env.DENO;
  try {
    return execFileSync("sh", ["-c", "command -v deno"], { encoding: "utf8" }).trim();
  } catch {
    const local = join(REPO_ROOT, ".tools/node_modules/.bin/deno");
    if (existsSync(local)) return local;
    throw new Error("Deno not found: set DENO or put deno on PATH");
  }
}

/** An endpoint with its login password. */
export interface Endpoint {
  id: string;
  password: string;
}

/** The first line the harness prints. */
export interface HarnessInfo {
  ws_url: string;
  tcp_url: string;
  http_url: string;
  admin: { password: string; cookie: string | null; api: boolean };
  endpoints: Endpoint[];
  pid: number;
  data_dir: string;
  log_file: string;
}

/** A running harness and its server. */
export class Harness {
  readonly info: HarnessInfo;
  readonly #child: ChildProcess;
  readonly #lines: Interface;
  readonly #replies: ((line: string) => void)[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #seq = 0;

  private constructor(child: ChildProcess, lines: Interface, info: HarnessInfo) {
    this.#child = child;
    this.#lines = lines;
    this.info = info;
    lines.on("line", (line) => this.#replies.shift()?.(line));
  }

  /**
   * Spawns the harness; `set` entries become `--set key=value` config overrides; with `netns` it
   * runs inside that network namespace (`ip netns exec`).
   */
  static async start(
    options: { endpoints?: number; set?: Record<string, unknown>; netns?: string } = {},
  ): Promise<Harness> {
    // permissions: not the shipped command: the conformance harness spawns the server (with the shipped set) and
    // toxiproxy.
    const args = [
      "run",
      "--quiet",
      "--allow-all",
      "--frozen",
      "--config",
      join(REPO_ROOT, "deno.json"),
      join(REPO_ROOT, "sdk/conformance/harness.ts"),
      "--endpoints",
      String(options.endpoints ?? 0),
      "--prefix",
      `t${process.pid.toString(36)}x`,
    ];
    for (const [k, v] of Object.entries(options.set ?? {})) {
      args.push("--set", `${k}=${JSON.stringify(v)}`);
    }
    // `netns`: the harness and its server run inside that network namespace.
    const cmd = options.netns ? "ip" : denoPath();
    const argv = options.netns ? ["netns", "exec", options.netns, denoPath(), ...args] : args;
    const child = spawn(cmd, argv, { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout! });
    const first = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error("The harness did not start in 90 s")),
        90_000,
      );
      lines.once("line", (l) => {
        clearTimeout(timer);
        resolve(l);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`The harness exited with ${code} before it was ready`));
      });
    });
    return new Harness(child, lines, JSON.parse(first) as HarnessInfo);
  }

  /** "127.0.0.1:port" of the server. */
  get address(): string {
    return this.info.http_url.replace(/^http:\/\//, "");
  }

  /** Sends one command and resolves with its `data`; rejects with its error. */
  command<T = Record<string, unknown>>(cmd: Record<string, unknown>): Promise<T> {
    const run = async () => {
      const line = await new Promise<string>((resolve) => {
        this.#replies.push(resolve);
        this.#child.stdin!.write(`${JSON.stringify(cmd)}\n`);
      });
      const reply = JSON.parse(line) as { ok: boolean; data?: T; error?: string };
      if (!reply.ok) throw new Error(`Harness command ${cmd.cmd} failed: ${reply.error}`);
      return reply.data as T;
    };
    const p = this.#queue.then(run, run);
    this.#queue = p.catch(() => {});
    return p;
  }

  /** Creates an endpoint with a unique id (or the given one). */
  endpoint(fields: { id?: string; password?: string; name?: string } = {}): Promise<Endpoint> {
    const id = fields.id ?? `t${process.pid.toString(36)}n${++this.#seq}`;
    return this.command<Endpoint>({ cmd: "endpoint", ...fields, id });
  }

  /** Sets the registration switch and code. */
  async registration(enabled: boolean, code?: string): Promise<void> {
    await this.command({ cmd: "registration", enabled, ...(code === undefined ? {} : { code }) });
  }

  /** A raw admin API call (admin API mode only). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    return this.command({ cmd: "admin", method, path, body });
  }

  /** Server exits nobody asked for: 1 when the harness (and its server) ended before `stop`. */
  crashes(): number {
    return this.#child.exitCode !== null || this.#child.signalCode !== null ? 1 : 0;
  }

  /** Closes stdin, which stops the server and removes its directory. */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise<void>((r) => this.#child.once("exit", () => r()));
    this.#child.stdin!.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
    this.#lines.close();
  }
}
