// Request/response round trips per second through the TypeScript SDK: each client calls
// `getSelf()` (spec 6.6 `self.get` -> `resp`) in a closed loop against a real server started by
// sdk/conformance/harness.ts, over WebSocket and over raw TCP.
//
//   npm run build                                   # in sdk/ts: the benchmark uses dist/
//   node sdk/ts/bench/rtt.mjs [--seconds 3] [--clients 1,10] [--transports websocket,tcp]
//                             [--sdk path/to/dist/index.js]
//   deno run -A sdk/ts/bench/rtt.mjs ...            # the same under Deno
//
// - One row per transport and client count: 0.5 s warm-up, then `--seconds` of timed round trips.
// - Server CPU µs/trip: utime + stime of the server process (/proc/<pid>/stat, Linux only)
//   divided by the round trips; client CPU µs/trip: this process's CPU over the same window.
// - `--sdk` loads another build of the SDK (e.g. one built from an older commit) for a
//   before/after comparison in the same conditions.
// - Bounded: every row lasts `--seconds` plus connect time; the whole run is killed after a
//   deadline, and the harness (server and temporary directory) is stopped at the end.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "../../..");
const WARMUP_MS = 500;
const CONNECT_TIMEOUT_MS = 30_000;

function parseArgs(argv) {
  const args = {
    seconds: 3,
    clients: [1, 10],
    transports: ["websocket", "tcp"],
    sdk: join(HERE, "../dist/index.js"),
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) usage();
    if (flag === "--seconds") args.seconds = Number(value);
    else if (flag === "--clients") args.clients = value.split(",").map(Number);
    else if (flag === "--transports") args.transports = value.split(",");
    else if (flag === "--sdk") args.sdk = resolve(value);
    else usage();
    i++;
  }
  const okTransports = args.transports.every((t) => t === "websocket" || t === "tcp");
  const okClients = args.clients.every((n) => Number.isInteger(n) && n > 0 && n <= 200);
  if (!(args.seconds > 0 && args.seconds <= 60) || !okTransports || !okClients) usage();
  return args;
}

function usage() {
  console.error(
    "Usage: rtt.mjs [--seconds 1..60] [--clients 1,10] [--transports websocket,tcp] [--sdk FILE]",
  );
  process.exit(2);
}

function denoPath() {
  if (process.env.DENO) return process.env.DENO;
  const local = join(REPO, ".tools/node_modules/.bin/deno");
  return existsSync(local) ? local : "deno";
}

/** Starts the harness with `n` endpoints; resolves with its first line and a stop function. */
async function startHarness(n) {
  // permissions: not the shipped command: the conformance harness spawns the server (with the shipped set).
  const child = spawn(denoPath(), [
    "run",
    "--quiet",
    "--allow-all",
    "--frozen",
    "--config",
    join(REPO, "deno.json"),
    join(REPO, "sdk/conformance/harness.ts"),
    "--endpoints",
    String(n),
    "--prefix",
    `bench${process.pid.toString(36)}x`,
    // The default 50 requests/s per endpoint would be the bottleneck (spec 11.1).
    "--set",
    "limits.requests_per_second=1000000",
  ], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("the harness did not start in 90 s")), 90_000);
    lines.once("line", (l) => {
      clearTimeout(timer);
      ok(l);
    });
    child.once("exit", (code) => fail(new Error(`the harness exited with ${code}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  };
  return { info: JSON.parse(first), stop };
}

/** CPU seconds (utime + stime) of a Linux process, or NaN elsewhere. */
function processCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of proc(5), counted from the state field (3rd): clock ticks (100 Hz).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function measure(NixMsgClient, info, endpoints, transport, seconds) {
  const options = { transport };
  const clients = endpoints.map((ep) =>
    NixMsgClient.connect(info.http_url, ep.id, { password: ep.password }, options)
  );
  try {
    await Promise.race([
      Promise.all(clients.map((c) => c.ready())),
      new Promise((_, fail) => {
        setTimeout(() => fail(new Error("clients not online in 30 s")), CONNECT_TIMEOUT_MS);
      }),
    ]);
    let phase = "warmup";
    let failure = null;
    const latencies = [];
    const loop = async (c) => {
      while (phase !== "done") {
        const t0 = performance.now();
        await c.getSelf();
        if (phase === "timed") latencies.push(performance.now() - t0);
      }
    };
    const loops = clients.map((c) =>
      loop(c).catch((err) => {
        failure ??= err;
        phase = "done";
      })
    );
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    phase = "timed";
    const cpu0 = process.cpuUsage();
    const server0 = processCpuSeconds(info.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    phase = "done";
    const elapsed = (performance.now() - t0) / 1000;
    const server1 = processCpuSeconds(info.pid);
    const cpu = process.cpuUsage(cpu0);
    const trips = latencies.length;
    await Promise.all(loops);
    if (failure) throw failure;
    latencies.sort((a, b) => a - b);
    return {
      trips,
      rate: trips / elapsed,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      serverUs: ((server1 - server0) * 1e6) / trips,
      clientUs: (cpu.user + cpu.system) / trips,
    };
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { NixMsgClient } = await import(pathToFileURL(args.sdk).href);
  const maxClients = Math.max(...args.clients);
  const rows = args.clients.length * args.transports.length;
  // Self-stopping: connect time and harness start/stop on top of the timed seconds.
  const deadline = setTimeout(() => {
    console.error("rtt.mjs: deadline passed, exiting");
    process.exit(3);
  }, (rows * (args.seconds + 1 + CONNECT_TIMEOUT_MS / 1000) + 180) * 1000);
  deadline.unref?.();
  const deno = typeof Deno === "undefined" ? null : Deno.version.deno;
  const runtime = deno ? `deno ${deno}` : `node ${process.version}`;
  console.log(`# SDK ${args.sdk}\n# ${runtime}, ${args.seconds} s per row`);
  const harness = await startHarness(maxClients);
  try {
    console.log(
      "| transport | clients | round trips/s | p50 ms | p99 ms | server CPU µs/trip | client CPU µs/trip |",
    );
    console.log("| --- | --: | --: | --: | --: | --: | --: |");
    for (const transport of args.transports) {
      for (const n of args.clients) {
        const eps = harness.info.endpoints.slice(0, n);
        const r = await measure(NixMsgClient, harness.info, eps, transport, args.seconds);
        const cells = [
          transport,
          n,
          r.rate.toFixed(0),
          r.p50.toFixed(2),
          r.p99.toFixed(2),
          r.serverUs.toFixed(0),
          r.clientUs.toFixed(0),
        ];
        console.log(`| ${cells.join(" | ")} |`);
      }
    }
  } finally {
    await harness.stop();
    clearTimeout(deadline);
  }
}

await main();
