// Holding many idle connections (issue 19 item 3; spec 13 压测): N WebSocket MQTT clients log in,
// say `hello` and stay connected and idle; reported: how long all handshakes take, the server's
// resident memory before and after, and the memory per connection.
//
//   deno run -A tests/bench/idle_connections.ts [--connections 10000] [--window 400]
//     [--workers 2] [--hold 10]
//
// 1. A temp home gets N endpoints (one password, hashed once at the production argon2id cost of
//    spec 12, m=19456 KiB, t=2, p=1, so each password login costs what it costs in production:
//    one verification, no rehash) and a config with `limits.max_clients`,
//    `limits.max_connections_per_ip` (all clients come from 127.0.0.1) and
//    `limits.requests_per_second` raised. `nixmsg serve` runs in its own child process under
//    `prlimit --nofile=F:F`, F = 1.25 N + 1024; `limits.max_connections` stays 0, so the server
//    derives its total cap from that limit.
// 2. Password phase: all N connect over ws:// with their password, subscribe, send `hello` and keep
//    the session token it returns; at most `--window` handshakes are in flight at once. The server
//    RSS is read from /proc before, once all are online, and again after `--hold` idle seconds.
// 3. All clients disconnect, the server is stopped (SIGTERM) and started again on the same data
//    directory; then the token phase does the same with the session tokens (no argon2).
// Every client answer, failure and server warning is counted; the bench exits 1 on any failure.
// The clients run in `--workers` Workers of this process, never in the server's process.
import type { MqttClient } from "mqtt";
import { helloLogin } from "./_mqtt_login.ts";

interface Job {
  kind: "password" | "token";
  url: string;
  ids: string[];
  secrets: string[];
  /** Most handshakes in flight at once in this Worker. */
  window: number;
}

interface JobResult {
  tokens: string[];
  connackMs: number[];
  helloMs: number[];
  failures: string[];
}

type WorkerMsg = JobResult | { error: string } | { closed: number };

const PASSWORD = "idle-password-1";
/** Bound of one client's handshake. */
const CLIENT_TIMEOUT_MS = 60_000;
/** Bound of one phase as a whole. */
const PHASE_TIMEOUT_MS = 10 * 60_000;

// ---------------------------------------------------------------------------------------------
// Clients (Worker)

function workerMain(): void {
  const scope = globalThis as unknown as {
    onmessage: ((e: MessageEvent<Job | "close">) => void) | null;
    postMessage(m: WorkerMsg): void;
  };
  let open: MqttClient[] = [];
  scope.onmessage = (e) => {
    if (e.data === "close") {
      const closing = open;
      open = [];
      Promise.all(closing.map((c) => c.endAsync(true))).then(
        () => scope.postMessage({ closed: closing.length }),
        (err) => scope.postMessage({ error: String(err?.stack ?? err) }),
      );
      return;
    }
    runJob(e.data, open).then(
      (r) => scope.postMessage(r),
      (err) => scope.postMessage({ error: String(err?.stack ?? err) }),
    );
  };
}

/** Logs every client of `job` in, at most `job.window` at a time, and keeps them open. */
async function runJob(job: Job, open: MqttClient[]): Promise<JobResult> {
  const result: JobResult = {
    tokens: new Array(job.ids.length).fill(""),
    connackMs: [],
    helloMs: [],
    failures: [],
  };
  let next = 0;
  const lane = async () => {
    while (next < job.ids.length) {
      const i = next++;
      try {
        const r = await helloLogin(job.url, job.ids[i], job.secrets[i], {
          timeoutMs: CLIENT_TIMEOUT_MS,
        });
        open.push(r.c);
        result.connackMs.push(r.connackMs);
        result.helloMs.push(r.helloMs);
        result.tokens[i] = r.token;
        if (job.kind === "password" && r.token === "") {
          result.failures.push(`${job.ids[i]}: no session_token in the hello answer`);
        }
      } catch (err) {
        result.failures.push(String((err as Error).message ?? err));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, job.window) }, lane));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Server and report (main thread)

interface Options {
  connections: number;
  window: number;
  /** In-flight bound of the token phase (default: `window`); N = all at once. */
  tokenWindow: number;
  workers: number;
  holdSeconds: number;
}

function parseOptions(args: readonly string[]): Options {
  const o: Options = {
    connections: 10_000,
    window: 400,
    tokenWindow: 0,
    workers: 2,
    holdSeconds: 10,
  };
  const keys: Record<string, keyof Options> = {
    "--connections": "connections",
    "--window": "window",
    "--token-window": "tokenWindow",
    "--workers": "workers",
    "--hold": "holdSeconds",
  };
  for (let i = 0; i < args.length; i += 2) {
    const key = keys[args[i]];
    const value = Number(args[i + 1]);
    if (key === undefined || !Number.isInteger(value) || value < 1) {
      throw new Error(`bad option ${args[i]} ${args[i + 1] ?? ""}`);
    }
    o[key] = value;
  }
  if (o.connections > 50_000 || o.holdSeconds > 600) throw new Error("options out of bounds");
  o.workers = Math.min(o.workers, o.connections);
  if (o.tokenWindow === 0) o.tokenWindow = o.window;
  return o;
}

interface PhaseReport {
  kind: Job["kind"];
  totalMs: number;
  connackMs: number[];
  helloMs: number[];
  failures: string[];
  tokens: string[];
  rssBefore: number;
  rssOnline: number;
  rssHeld: number;
  clientRssBefore: number;
  clientRssOnline: number;
  serverWs: number;
  window: number;
  /** CPU time during the handshakes (ms): server, all threads and main thread; client process. */
  serverCpuMs: number;
  serverMainCpuMs: number;
  clientCpuMs: number;
  /** Kernel counters during the handshakes (system-wide, TcpExt in /proc/net/netstat). */
  listenOverflows: number;
  synRetrans: number;
}

const MiB = 1024 * 1024;

function pct(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

/** Open files limit of this process (soft), from /proc. */
function ownFdLimit(): number {
  const m = /^Max open files\s+(\d+)/m.exec(Deno.readTextFileSync("/proc/self/limits"));
  return m === null ? Infinity : Number(m[1]);
}

/** The TcpExt counters of /proc/net/netstat by name (system-wide). */
function tcpExt(): Record<string, number> {
  const lines = Deno.readTextFileSync("/proc/net/netstat").split("\n")
    .filter((l) => l.startsWith("TcpExt:"));
  const names = lines[0]?.split(" ") ?? [];
  const values = lines[1]?.split(" ") ?? [];
  return Object.fromEntries(names.map((k, i) => [k, Number(values[i])]));
}

/** `nixmsg_connections{transport="ws"}` from the server's /metrics. */
async function serverWsConnections(port: number, token: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const m = /^nixmsg_connections\{transport="ws"\} (\d+)/m.exec(text);
  return m === null ? NaN : Number(m[1]);
}

async function main(): Promise<void> {
  const { manyIdleClients, prepareHome, sampleProc, startChildServer } = await import(
    "./_load_util.ts"
  );
  const { DEFAULT_ARGON2_PARAMS } = await import("../../server/auth/password_pool.ts");
  const o = parseOptions(Deno.args);
  const n = o.connections;

  // This process holds one socket per client, plus the runtime's own descriptors.
  const clientFds = n + 1024;
  if (ownFdLimit() < clientFds) {
    // prlimit can change the limits of a running process: the soft limit up to the hard one for
    // anyone, past it as root.
    const out = await new Deno.Command("prlimit", {
      args: ["--pid", String(Deno.pid), `--nofile=${clientFds}:${clientFds}`],
      stderr: "piped",
    }).output();
    if (!out.success || ownFdLimit() < clientFds) {
      throw new Error(
        `The open-files limit of this process is ${ownFdLimit()}, ${clientFds} needed: ` +
          `run under "prlimit --nofile=${clientFds}:${clientFds} --" or pass fewer connections`,
      );
    }
  }
  const serverFds = Math.ceil(n * 1.25) + 1024;
  const wrap = ["prlimit", `--nofile=${serverFds}:${serverFds}`, "--"];
  const metricsToken = "idle-bench-metrics-token";

  const ids = Array.from({ length: n }, (_, i) => `idle${String(i).padStart(5, "0")}`);
  let started = performance.now();
  const home = await prepareHome(
    {
      ...manyIdleClients(n),
      metrics: { token: metricsToken },
    },
    ids,
    PASSWORD,
    DEFAULT_ARGON2_PARAMS,
  );
  console.error(`prepared ${n} endpoints in ${(performance.now() - started).toFixed(0)} ms`);

  const workers = Array.from(
    { length: o.workers },
    () => new Worker(new URL("./idle_connections.ts?worker", import.meta.url), { type: "module" }),
  );
  const ask = (w: Worker, msg: Job | "close") =>
    new Promise<WorkerMsg>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error("a client Worker timed out")),
        PHASE_TIMEOUT_MS,
      );
      w.onmessage = (e: MessageEvent<WorkerMsg>) => {
        clearTimeout(timer);
        if ("error" in e.data) reject(new Error(e.data.error));
        else resolve(e.data);
      };
      w.postMessage(msg);
    });
  // Client i runs in Worker i % workers.
  const share = <T>(xs: readonly T[], k: number) => xs.filter((_, i) => i % o.workers === k);

  let server = await startChildServer(home, 60_000, wrap);
  const problems: string[] = [];
  let failed = false;
  try {
    const runPhase = async (kind: Job["kind"], secrets: string[]): Promise<PhaseReport> => {
      const url = `ws://127.0.0.1:${server.port}/mqtt`;
      const window = kind === "password" ? o.window : o.tokenWindow;
      const server0 = sampleProc(server.pid);
      const client0 = sampleProc(Deno.pid);
      const kernel0 = tcpExt();
      const t0 = performance.now();
      const results = await Promise.all(workers.map((w, k) =>
        ask(w, {
          kind,
          url,
          ids: share(ids, k),
          secrets: share(secrets, k),
          window: Math.max(1, Math.ceil(window / o.workers)),
        }) as Promise<JobResult>
      ));
      const totalMs = performance.now() - t0;
      const server1 = sampleProc(server.pid);
      const client1 = sampleProc(Deno.pid);
      const kernel1 = tcpExt();
      const serverWs = await serverWsConnections(server.port, metricsToken);
      console.error(
        `${kind} phase: ${totalMs.toFixed(0)} ms; holding ${serverWs} idle for ${o.holdSeconds} s`,
      );
      // The hold is the measurement itself (does the memory stay put while idle?), not a wait.
      await new Promise((r) => setTimeout(r, o.holdSeconds * 1000));
      const rssHeld = sampleProc(server.pid).rssBytes;
      const tokens = new Array<string>(n).fill("");
      results.forEach((r, k) => {
        r.tokens.forEach((t, j) => (tokens[j * o.workers + k] = t));
      });
      const failures = results.flatMap((r) => r.failures);
      const stillWs = await serverWsConnections(server.port, metricsToken);
      if (stillWs !== serverWs) failures.push(`server connections went ${serverWs} -> ${stillWs}`);
      return {
        kind,
        totalMs,
        connackMs: results.flatMap((r) => r.connackMs),
        helloMs: results.flatMap((r) => r.helloMs),
        failures,
        tokens,
        rssBefore: server0.rssBytes,
        rssOnline: server1.rssBytes,
        rssHeld,
        clientRssBefore: client0.rssBytes,
        clientRssOnline: client1.rssBytes,
        serverWs,
        window,
        serverCpuMs: server1.cpuMs - server0.cpuMs,
        serverMainCpuMs: server1.mainCpuMs - server0.mainCpuMs,
        clientCpuMs: client1.cpuMs - client0.cpuMs,
        listenOverflows: kernel1.ListenOverflows - kernel0.ListenOverflows,
        synRetrans: kernel1.TCPSynRetrans - kernel0.TCPSynRetrans,
      };
    };
    const closeAll = async () => {
      const closed = await Promise.all(workers.map((w) => ask(w, "close")));
      return closed.reduce((s, c) => s + ("closed" in c ? c.closed : 0), 0);
    };

    const pw = await runPhase("password", ids.map(() => PASSWORD));
    const closed = await closeAll();
    console.error(`closed ${closed} clients; restarting the server`);
    problems.push(...server.problems);
    const code = await server.stop();
    if (code !== 0) throw new Error(`the server exited with ${code} on SIGTERM`);
    started = performance.now();
    server = await startChildServer(home, 60_000, wrap);
    console.error(`restarted in ${(performance.now() - started).toFixed(0)} ms`);
    const tok = await runPhase("token", pw.tokens);
    await closeAll();
    problems.push(...server.problems);
    const lastCode = await server.stop();
    if (lastCode !== 0) throw new Error(`the server exited with ${lastCode} on SIGTERM`);

    const phases = [pw, tok];
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    const mib = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
    const perConn = (p: PhaseReport) =>
      `${((p.rssOnline - p.rssBefore) / n / 1024).toFixed(1)} KiB`;
    console.log(
      `\nIdle WebSocket connections: ${n} clients in ${o.workers} Worker(s), at most ` +
        `${o.window} (password) / ${o.tokenWindow} (token) handshakes in flight, held ${o.holdSeconds} s; server open-files limit ` +
        `${serverFds}; passwords hashed at the production argon2id cost (m=19456 KiB, t=2, p=1)\n`,
    );
    console.log("| measure | password phase | token phase (after a restart) |");
    console.log("|---|--:|--:|");
    const row = (label: string, f: (p: PhaseReport) => string) =>
      console.log(`| ${label} | ${phases.map(f).join(" | ")} |`);
    row("online (hello answered)", (p) => `${p.helloMs.length} / ${n}`);
    row("server: WS connections (metrics)", (p) => `${p.serverWs}`);
    row("failures", (p) => `${p.failures.length}`);
    row("**all online (last hello answer)**", (p) => `**${ms(p.totalMs)}**`);
    row("CONNACK p50 / p99", (p) => `${ms(pct(p.connackMs, 0.5))} / ${ms(pct(p.connackMs, 0.99))}`);
    row("hello p50 / p99", (p) => `${ms(pct(p.helloMs, 0.5))} / ${ms(pct(p.helloMs, 0.99))}`);
    row("server RSS before", (p) => mib(p.rssBefore));
    row("server RSS, all online", (p) => mib(p.rssOnline));
    row(`server RSS after ${o.holdSeconds} s idle`, (p) => mib(p.rssHeld));
    row("**server memory per connection**", (p) => `**${perConn(p)}**`);
    row(
      "client process RSS before / online",
      (p) => `${mib(p.clientRssBefore)} / ${mib(p.clientRssOnline)}`,
    );
    const cpu = (used: number, p: PhaseReport) => `${((100 * used) / p.totalMs).toFixed(0)} %`;
    row("server CPU during handshakes, all threads", (p) => cpu(p.serverCpuMs, p));
    row("server CPU during handshakes, main thread", (p) => cpu(p.serverMainCpuMs, p));
    row("client process CPU during handshakes", (p) => cpu(p.clientCpuMs, p));
    row(
      "listen queue overflows / SYN retransmits (system-wide)",
      (p) => `${p.listenOverflows} / ${p.synRetrans}`,
    );
    const worst = Math.max(pw.rssHeld, pw.rssOnline, tok.rssHeld, tok.rssOnline);
    console.log(
      `\ntarget (${n} idle WS connections < 1 GiB server RSS): ` +
        `${worst < 1024 * MiB ? "met" : "NOT met"} (largest ${mib(worst)})`,
    );
    if (n === 1000) {
      console.log(
        `target (1,000 token reconnects after a restart all online < 10 s): ` +
          `${tok.totalMs < 10_000 ? "met" : "NOT met"} (${ms(tok.totalMs)})`,
      );
    }
    for (const p of phases) {
      if (p.failures.length === 0 && p.helloMs.length === n && p.serverWs === n) continue;
      failed = true;
      console.log(`\n${p.kind} phase failures (first 5):\n${p.failures.slice(0, 5).join("\n")}`);
    }
    if (problems.length > 0) {
      failed = true;
      console.log(`\nserver warnings (first 5):\n${problems.slice(0, 5).join("\n")}`);
    }
  } catch (err) {
    failed = true;
    console.error(err);
  } finally {
    for (const w of workers) w.terminate();
    server.kill();
    await home.cleanup().catch(() => {});
  }
  Deno.exit(failed ? 1 : 0);
}

if (new URL(import.meta.url).search === "?worker") workerMain();
else await main();
