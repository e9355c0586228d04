// The one server the fuzz test attacks: a `nixmsg serve` child process (a crash is its exit),
// restarted on the same data directory after a crash so the remaining inputs still run, plus the
// bounded, concurrent phase runner that pins a crash on the input that caused it.
import { PasswordPool } from "../../server/auth/password_pool.ts";
import { dbPath } from "../../server/app/paths.ts";
import { openDb } from "../../server/store/db.ts";
import { setSetting } from "../../server/store/ops/settings.ts";
import { prepareHome } from "../bench/_load_util.ts";
import { makeCert } from "../../server/net/_test_util.ts";
import { type ServerProcess, startServerProcess, type TestHome } from "./server_process.ts";
import { TEST_POOL_PARAMS } from "./test_server.ts";

/** A response that must never appear: a stack frame or a source location (STYLE 4). */
const STACK_TRACE = /\n\s+at \S|\bat (?:file|ext|node):|file:\/\/|\.(?:ts|js|mjs):\d+:\d+/;

/** True when `text` (a response, decoded loosely) contains a stack trace or a source path. */
export function leaksStack(text: string): boolean {
  return STACK_TRACE.test(text);
}

/** The uncaught error in a dead server's stderr and the first frames of its stack. */
function uncaught(stderr: string): string {
  const lines = stderr.split("\n");
  const at = lines.findIndex((l) => /Uncaught|^error:/i.test(l));
  return (at < 0 ? lines.slice(-4) : lines.slice(at, at + 4)).join("\n").trim();
}

/** One input that ended the server process. */
export interface Crash {
  phase: string;
  /** The input the replay pinned the crash on, or null when no single input reproduced it. */
  culprit: string | null;
  /** How many of the inputs started last were replayed to find the culprit. */
  suspects: number;
  /** The uncaught error from the server's stderr. */
  stderr: string;
}

/** A defect other than a crash: a leaked stack trace, a hang, a 500. */
export interface Finding {
  phase: string;
  input: string;
  what: string;
}

/** What running one input observed. */
export interface Outcome {
  /** Server reply bytes or text, checked for stack traces. */
  reply: string;
  /** A defect this input showed by itself (e.g. no response, HTTP 500), if any. */
  problem?: string;
  /** What the server answered, counted per phase to show the inputs reached the handlers. */
  tag?: string;
  /** The connection was refused: the server is not listening (it died); the input did not run. */
  refused?: boolean;
}

/** An input of a phase: its description and how to run it against a port. */
export interface FuzzInput {
  name: string;
  run(port: number): Promise<Outcome>;
}

/** The passwords and ids of the endpoints the fuzz test creates. */
export const FUZZ_PASSWORD = "fuzz-password-1";
export const ADMIN_PASSWORD = "fuzz-admin-password-1";
const METRICS_TOKEN = "fuzz-metrics-token";

/** The server under test, its findings, and its restarts. */
export class FuzzTarget {
  readonly home: TestHome;
  readonly crashes: Crash[] = [];
  readonly findings: Finding[] = [];
  /** Per phase, how many replies carried each {@linkcode Outcome.tag}. */
  readonly tags: Record<string, Record<string, number>> = {};
  /** How long each phase took, in seconds. */
  readonly seconds: Record<string, number> = {};
  readonly tls: boolean;
  #server: ServerProcess;
  #dead = false;

  private constructor(home: TestHome, server: ServerProcess, tls: boolean) {
    this.home = home;
    this.tls = tls;
    this.#server = server;
    this.#watch();
  }

  /**
   * Prepares a data directory with endpoints `ids` (password {@linkcode FUZZ_PASSWORD}), the
   * admin password {@linkcode ADMIN_PASSWORD}, a certificate when `openssl` exists (TLS and
   * plaintext on one port), and a request rate high enough not to hide the handlers.
   */
  static async start(ids: readonly string[], withTls: boolean): Promise<FuzzTarget> {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-fuzz-cert-" });
    const cert = withTls ? await makeCert(dir, "fuzz") : null;
    const home = await prepareHome(
      {
        log: { level: "info" },
        limits: { requests_per_second: 100_000 },
        metrics: { token: METRICS_TOKEN },
        timeouts: { first_byte_seconds: 2, hello_seconds: 5, shutdown_drain_seconds: 2 },
        ...(cert
          ? { tls: { cert_file: cert.certFile, key_file: cert.keyFile, allow_plaintext: true } }
          : {}),
      },
      ids,
      FUZZ_PASSWORD,
    );
    home.env.NO_COLOR = "1";
    const cleanup = home.cleanup;
    home.cleanup = async () => {
      await cleanup();
      await Deno.remove(dir, { recursive: true });
    };
    const db = openDb(dbPath(home.dataDir));
    try {
      const hash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(ADMIN_PASSWORD);
      setSetting(db, { key: "admin_password_hash", value: hash }, Date.now());
    } finally {
      db.close();
    }
    return new FuzzTarget(home, await startServerProcess(home), cert !== null);
  }

  #watch(): void {
    const server = this.#server;
    void server.exited.then(() => {
      if (server === this.#server) this.#dead = true;
    });
  }

  get port(): number {
    return this.#server.port;
  }

  get alive(): boolean {
    return !this.#dead;
  }

  get server(): ServerProcess {
    return this.#server;
  }

  /** Starts a new server process on the same data directory after a crash. */
  async restart(): Promise<void> {
    await this.#server.exited;
    this.#server = await startServerProcess(this.home);
    this.#dead = false;
    this.#watch();
  }

  /** GET `path` with a deadline; the status, or null when there was no answer in time. */
  async probe(path: string, timeoutMs = 5000): Promise<number | null> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}${path}`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.body?.cancel();
      return res.status;
    } catch {
      return null;
    }
  }

  /** The MQTT connections the server counts now (`nixmsg_connections`), or null without an answer. */
  async mqttConnections(): Promise<number | null> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}/metrics`, {
        headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
        signal: AbortSignal.timeout(5000),
      });
      const text = await res.text();
      const counts = [...text.matchAll(/^nixmsg_connections\{[^}]*\} (\d+)$/gm)];
      return counts.length === 0 ? null : counts.reduce((n, m) => n + Number(m[1]), 0);
    } catch {
      return null;
    }
  }

  /**
   * Waits (polling, at most `ms`) until the server counts no MQTT connection; every fuzzed client
   * has closed, so one still counted is a leak. Records a finding when it stays above 0.
   */
  async expectNoConnections(ms = 10_000): Promise<void> {
    const until = Date.now() + ms;
    let count: number | null = null;
    while (Date.now() < until) {
      count = await this.mqttConnections();
      if (count === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    this.findings.push({
      phase: "after",
      input: "(all)",
      what: `${count} MQTT connections still counted ${ms} ms after every client closed`,
    });
  }

  /**
   * Runs one input and records what it showed. Returns false, recording nothing, when the
   * connection was refused: the server is gone and the input did not run.
   */
  async #runOne(phase: string, input: FuzzInput): Promise<boolean> {
    try {
      const out = await input.run(this.port);
      if (out.refused) return false;
      if (leaksStack(out.reply)) {
        const at = out.reply.search(STACK_TRACE);
        const excerpt = out.reply.slice(Math.max(0, at - 80), at + 120);
        this.findings.push({ phase, input: input.name, what: `stack trace in reply: ${excerpt}` });
      }
      if (out.problem) this.findings.push({ phase, input: input.name, what: out.problem });
      if (out.tag !== undefined) {
        const tags = this.tags[phase] ??= {};
        tags[out.tag] = (tags[out.tag] ?? 0) + 1;
      }
    } catch (err) {
      this.findings.push({ phase, input: input.name, what: `runner threw: ${err}` });
    }
    return true;
  }

  /** True when the process has exited, waiting at most `ms` for it to do so. */
  async #exitedWithin(ms: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const gone = await Promise.race([
      this.#server.exited.then(() => true),
      new Promise<false>((r) => (timer = setTimeout(() => r(false), ms))),
    ]);
    clearTimeout(timer);
    return gone;
  }

  /**
   * After the process died: restarts it and replays `suspects` one at a time until one kills it
   * again (then restarts once more). Returns that input's name and the error it died with.
   */
  async #pinCrash(
    phase: string,
    suspects: FuzzInput[],
  ): Promise<{ culprit: string; stderr: string } | null> {
    if (!this.alive) await this.restart();
    for (const input of suspects) {
      await this.#runOne(phase, input);
      // The probe also gives a dying process the time to exit.
      if ((await this.probe("/healthz")) !== null && this.alive) continue;
      if (!(await this.#exitedWithin(5000))) await this.#server.kill();
      const stderr = uncaught(this.#server.stderr());
      await this.restart();
      return { culprit: input.name, stderr };
    }
    return null;
  }

  /**
   * Runs `count` inputs made by `make(i)`, `concurrency` at a time, starting none after
   * `budgetMs`. When the server dies, records the crash, replays the inputs started last to pin it
   * on one, restarts and goes on (inputs refused meanwhile run again); after `maxCrashes` crashes
   * the rest of the phase is skipped (and recorded as a finding). Input names must be unique.
   * Returns how many inputs ran.
   */
  async runPhase(
    phase: string,
    opts: { count: number; concurrency: number; budgetMs: number; maxCrashes?: number },
    make: (i: number) => FuzzInput,
  ): Promise<number> {
    const { count, concurrency, budgetMs, maxCrashes = 3 } = opts;
    const started = Date.now();
    const inTime = () => Date.now() - started < budgetMs;
    let next = 0;
    let ran = 0;
    let crashes = 0;
    const again: FuzzInput[] = [];
    // The inputs started last: a crash is one of them (the exit is seen a little late).
    let recent: FuzzInput[] = [];
    while ((next < count || again.length > 0) && crashes < maxCrashes && inTime()) {
      let refused = false;
      const worker = async () => {
        while ((next < count || again.length > 0) && this.alive && !refused && inTime()) {
          const input = again.shift() ?? make(next++);
          recent.push(input);
          if (recent.length > 2 * concurrency) recent.shift();
          if (await this.#runOne(phase, input)) {
            ran++;
            continue;
          }
          refused = true;
          again.push(input);
          recent = recent.filter((r) => r !== input);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      if (!refused && (await this.probe("/healthz")) !== null && this.alive) continue;
      if (!(await this.#exitedWithin(5000))) {
        this.findings.push({
          phase,
          input: recent.map((r) => r.name).join(" | "),
          what: "the server stopped answering or accepting (hang) after these inputs",
        });
        await this.#server.kill();
        await this.restart();
        break;
      }
      crashes++;
      const stderr = uncaught(this.#server.stderr());
      const suspects = recent;
      recent = [];
      const pinned = await this.#pinCrash(phase, suspects);
      this.crashes.push({
        phase,
        culprit: pinned?.culprit ?? null,
        suspects: suspects.length,
        stderr: pinned?.stderr ?? stderr,
      });
    }
    const skipped = count - next + again.length;
    if (skipped > 0 && crashes >= maxCrashes) {
      this.findings.push({
        phase,
        input: "(rest of the phase)",
        what: `skipped ${skipped} inputs after ${crashes} crashes`,
      });
    }
    this.seconds[phase] = (Date.now() - started) / 1000;
    return ran;
  }

  /** Stops the server (SIGTERM) and removes the data directory. */
  async close(): Promise<void> {
    if (this.alive) await this.#server.stop();
    else await this.#server.exited;
    await this.home.cleanup();
  }
}
