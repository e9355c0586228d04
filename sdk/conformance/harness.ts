/**
 * Conformance harness: starts a fresh, real NixMsg server for one SDK test run (spec 9 接入清单,
 * 13). Any language's test runner spawns it, reads ONE JSON line from its stdout, then sends
 * commands as JSON lines on stdin and reads one JSON line back per command. Closing stdin (or
 * SIGTERM / SIGINT) stops the server and removes the temporary directory.
 *
 * ```sh
 * deno run -A --config deno.json sdk/conformance/harness.ts --endpoints 3
 * ```
 *
 * First line: `{"ws_url","tcp_url","http_url","admin":{"password","cookie"},
 * "endpoints":[{"id","password"}],"pid","data_dir","log_file"}`. Commands: see `README.md`.
 *
 * With `--cluster N` (or `NIXMSG_HARNESS_CLUSTER=N`) it starts a PostgreSQL-backed cluster of N
 * nodes behind HAProxy instead (see `_cluster.ts`): the URLs are HAProxy's, `pid`/`data_dir` are
 * node 1's, `log_file` is empty (the nodes' logs are kept in memory), and `cluster` is N.
 * @module
 */
import { join } from "node:path";
import { stringify } from "yaml";
import { DENO_PERMISSIONS } from "../../scripts/deno_permissions.ts";
import { AdminClient, type Command } from "./_admin.ts";
import { isToxiCommand, ToxiproxyRunner } from "./_toxiproxy.ts";
import { type HarnessCluster, startHarnessCluster } from "./_cluster.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAIN = join(ROOT, "server/main.ts");
const START_TIMEOUT_MS = 60_000;

/** Defaults that make timeouts observable within a test (spec 11.1 keys). */
const TEST_CONFIG: Record<string, unknown> = {
  listen: "127.0.0.1:0",
  limits: { ack_timeout_seconds: 2, grace_seconds: 2 },
  timeouts: { hello_seconds: 5, first_byte_seconds: 5, shutdown_drain_seconds: 2 },
  log: { level: "info" },
};

interface Args {
  endpoints: number;
  /** Nodes behind HAProxy; 0 = one server, as before. */
  cluster: number;
  prefix: string;
  set: [string[], unknown][];
}

function usage(): never {
  console.error(
    "Usage: harness.ts [--endpoints N] [--prefix P] [--cluster N] [--set limits.grace_seconds=5 ...]",
  );
  Deno.exit(2);
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    endpoints: 0,
    prefix: "e",
    set: [],
    cluster: Number(Deno.env.get("NIXMSG_HARNESS_CLUSTER") ?? 0),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = argv[i + 1];
    if (a === "--endpoints" && value) args.endpoints = Number(argv[++i]);
    else if (a === "--prefix" && value) args.prefix = argv[++i];
    else if (a === "--cluster" && value) args.cluster = Number(argv[++i]);
    else if (a === "--set" && value?.includes("=")) {
      const [key, ...rest] = argv[++i].split("=");
      const raw = rest.join("=");
      let parsed: unknown = raw;
      try {
        parsed = JSON.parse(raw);
      } catch { /* a plain string */ }
      args.set.push([key.split("."), parsed]);
    } else usage();
  }
  if (!Number.isInteger(args.endpoints) || args.endpoints < 0) usage();
  if (!Number.isInteger(args.cluster) || args.cluster < 0) usage();
  return args;
}

function merge(config: Record<string, unknown>, path: string[], value: unknown): void {
  let node = config;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

/** `deno run` with the shipped permissions (server/deno_permissions.txt), as `./nixmsg` runs. */
function denoArgs(args: string[]): string[] {
  return [
    "run",
    "--quiet",
    ...DENO_PERMISSIONS,
    "--frozen",
    "--config",
    join(ROOT, "deno.json"),
    ...args,
  ];
}

async function adminInit(env: Record<string, string>, cwd: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: denoArgs([MAIN, "admin", "init"]),
    env,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const m = text.match(/password: (\S+)/);
  if (out.code !== 0 || !m) {
    throw new Error(`admin init failed (${out.code}): ${new TextDecoder().decode(out.stderr)}`);
  }
  return m[1];
}

/** Starts `nixmsg serve`, logging to `logFile`; resolves once it logs "nixmsg serving". */
async function serve(env: Record<string, string>, cwd: string, logFile: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: denoArgs([MAIN, "serve"]),
    env,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const log = await Deno.open(logFile, { write: true, create: true, append: true });
  let serving: () => void = () => {};
  const started = new Promise<void>((r) => (serving = r));
  const pump = async (stream: ReadableStream<Uint8Array>, watch: boolean) => {
    let buf = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      await log.write(new TextEncoder().encode(chunk));
      if (!watch) continue;
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"nixmsg serving"')) serving();
      }
    }
  };
  const drained = Promise.all([pump(child.stdout, true), pump(child.stderr, false)])
    .finally(() => log.close());
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    started.then(() => "serving" as const),
    child.status.then(() => "exited" as const),
    new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), START_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  if (outcome !== "serving") {
    if (outcome === "timeout") child.kill("SIGKILL");
    await child.status;
    await drained;
    throw new Error(`Server did not start (${outcome}):\n${await Deno.readTextFile(logFile)}`);
  }
  return { child, drained };
}

async function main(): Promise<void> {
  const args = parseArgs(Deno.args);
  if (args.cluster > 0) return await clusterMain(args);
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-conformance-" });
  const dataDir = join(dir, "data");
  const configPath = join(dir, "config.yaml");
  const logFile = join(dir, "server.log");
  const config: Record<string, unknown> = structuredClone(TEST_CONFIG);
  config.data_dir = dataDir;
  for (const [path, value] of args.set) merge(config, path, value);
  await Deno.writeTextFile(configPath, stringify(config));
  const env = { ...Deno.env.toObject(), NIXMSG_CONFIG: configPath };

  let server: Awaited<ReturnType<typeof serve>> | null = null;
  let toxiproxy: ToxiproxyRunner | null = null;
  let stopping: Promise<void> | null = null;
  const stop = (code: number) => {
    stopping ??= (async () => {
      await toxiproxy?.stop().catch(() => {});
      if (server) {
        try {
          server.child.kill("SIGTERM");
        } catch { /* already gone */ }
        await server.child.status;
        await server.drained;
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      Deno.exit(code);
    })();
    return stopping;
  };
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => stop(0));

  try {
    const adminPassword = await adminInit(env, dir);
    server = await serve(env, dir, logFile);
    const addr = (await Deno.readTextFile(join(dataDir, "listen.addr"))).trim();
    toxiproxy = new ToxiproxyRunner(addr, join(dir, "toxiproxy.log"));
    const httpUrl = `http://${addr}`;
    const admin = await AdminClient.open(httpUrl, adminPassword);
    const endpoints = [];
    for (let i = 1; i <= args.endpoints; i++) {
      endpoints.push(await admin.createEndpoint({ id: `${args.prefix}${i}` }));
    }
    const ready = {
      ws_url: `ws://${addr}/mqtt`,
      tcp_url: `mqtt://${addr}`,
      http_url: httpUrl,
      admin: { password: adminPassword, cookie: admin.cookie },
      endpoints,
      pid: server.child.pid,
      data_dir: dataDir,
      log_file: logFile,
    };
    console.log(JSON.stringify(ready));
    server.child.status.then((s) => {
      if (!stopping) {
        console.error(`harness: the server exited with ${s.code}`);
        void stop(1);
      }
    });
    const runner = toxiproxy;
    await commandLoop((c) => isToxiCommand(c) ? runner.command(c) : admin.command(c as Command));
  } catch (err) {
    console.error(`harness: ${err instanceof Error ? err.stack : String(err)}`);
    await stop(1);
  }
  await stop(0);
}

/** `--cluster N`: the same first line and commands, through HAProxy in front of N nodes. */
async function clusterMain(args: Args): Promise<void> {
  const config: Record<string, unknown> = structuredClone(TEST_CONFIG);
  for (const [path, value] of args.set) merge(config, path, value);
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-conformance-" });
  let cluster: HarnessCluster | null = null;
  let toxiproxy: ToxiproxyRunner | null = null;
  let stopping: Promise<void> | null = null;
  const stop = (code: number) => {
    stopping ??= (async () => {
      await toxiproxy?.stop().catch(() => {});
      await cluster?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      Deno.exit(code);
    })();
    return stopping;
  };
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => stop(0));
  try {
    cluster = await startHarnessCluster(args.cluster, config, ROOT);
    const front = cluster.front;
    toxiproxy = new ToxiproxyRunner(front, join(dir, "toxiproxy.log"));
    const admin = await AdminClient.open(`http://${cluster.node1}`, cluster.adminPassword);
    const endpoints = [];
    for (let i = 1; i <= args.endpoints; i++) {
      endpoints.push(await admin.createEndpoint({ id: `${args.prefix}${i}` }));
    }
    console.log(JSON.stringify({
      ws_url: `ws://${front}/mqtt`,
      tcp_url: `mqtt://${front}`,
      http_url: `http://${front}`,
      admin: { password: cluster.adminPassword, cookie: admin.cookie },
      endpoints,
      pid: cluster.pids[0],
      data_dir: cluster.dataDirs[0],
      log_file: "",
      cluster: args.cluster,
    }));
    void cluster.exited.then(() => {
      if (!stopping) {
        console.error("harness: a cluster node exited");
        void stop(1);
      }
    });
    const runner = toxiproxy;
    await commandLoop((c) => isToxiCommand(c) ? runner.command(c) : admin.command(c as Command));
  } catch (err) {
    console.error(`harness: ${err instanceof Error ? err.stack : String(err)}`);
    await stop(1);
  }
  await stop(0);
}

/** Reads JSON commands from stdin until it closes; answers each with one JSON line. */
async function commandLoop(run: (c: { cmd?: unknown }) => Promise<unknown>): Promise<void> {
  let buf = "";
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line === "") continue;
      let reply: unknown;
      try {
        reply = { ok: true, data: await run(JSON.parse(line)) };
      } catch (err) {
        reply = { ok: false, error: err instanceof Error ? err.message : String(err) };
      }
      console.log(JSON.stringify(reply));
    }
  }
}

if (import.meta.main) await main();
