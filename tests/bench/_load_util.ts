// Helpers of the messaging load benchmark: a `nixmsg serve` child process with endpoints written
// into its database beforehand, /proc sampling of that child, and a lean protocol client.
import { join } from "node:path";
import { DENO_PERMISSIONS } from "../../scripts/deno_permissions.ts";
import mqtt, { type MqttClient } from "mqtt";
import { tuneStream } from "../../sdk/ts/src/transport.ts";
import { makeTestHome, runCli, type TestHome } from "../helpers/server_process.ts";
import { TEST_POOL_PARAMS } from "../helpers/test_server.ts";
import { type Argon2Params, PasswordPool } from "../../server/auth/password_pool.ts";
import { dbPath } from "../../server/app/paths.ts";
import type { openDb as OpenDb } from "../../server/store/db.ts";
import type { migrate as Migrate } from "../../server/store/migrations.ts";
import type { createEndpoint as CreateEndpoint } from "../../server/store/ops/endpoints.ts";

/** NIXMSG_BENCH_STDOUT=file: append the server's raw stdout lines there. */
const STDOUT_COPY = Deno.env.get("NIXMSG_BENCH_STDOUT");

/**
 * The checkout whose server the benches run: this one, or NIXMSG_BENCH_SERVER_ROOT (another
 * worktree, e.g. an older commit) so that the same load generator measures before and after.
 */
const ROOT =
  (Deno.env.get("NIXMSG_BENCH_SERVER_ROOT") ?? new URL("../../", import.meta.url).pathname)
    .replace(/\/?$/, "/");

/** A module of the checkout under test (its schema and ops may be older than this one's). */
function serverModule<T>(path: string): Promise<T> {
  return import(new URL(path, `file://${ROOT}`).href);
}

/**
 * MQTT.js's Node WebSocket transport sends each piece of a packet as its own frame. The load
 * generators send one frame per packet instead, as the SDKs and browsers do
 * (sdk/ts/src/transport.ts); NIXMSG_BENCH_STOCK_WS=1 keeps the stock transport.
 */
export function tuneBenchStream(client: MqttClient, url: string): void {
  if (Deno.env.get("NIXMSG_BENCH_STOCK_WS") === "1") {
    (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
    return;
  }
  tuneStream(client.stream, url);
}

/** A downlink frame as JSON. */
export type Frame = Record<string, unknown> & { type: string };

/**
 * A temp home whose database already holds the admin password and `ids` as endpoints (there is
 * no admin API yet), all with `password` hashed at `params` (default: the cheap test cost, which
 * the server verifies and then replaces at its own cost on the first login).
 */
export async function prepareHome(
  overrides: Record<string, unknown>,
  ids: readonly string[],
  password: string,
  params: Argon2Params = TEST_POOL_PARAMS,
): Promise<TestHome> {
  const home = await makeTestHome(overrides);
  // The database is made by the checkout that will serve it: an older server refuses a newer schema.
  home.root = ROOT;
  const init = await runCli(home, ["admin", "init"]);
  if (init.code !== 0) throw new Error(`admin init failed: ${init.stderr}`);
  const { migrate } = await serverModule<{ migrate: typeof Migrate }>("server/store/migrations.ts");
  const { openDb } = await serverModule<{ openDb: typeof OpenDb }>("server/store/db.ts");
  const { createEndpoint } = await serverModule<{ createEndpoint: typeof CreateEndpoint }>(
    "server/store/ops/endpoints.ts",
  );
  const path = dbPath(home.dataDir);
  await migrate(path, { backupDir: join(home.dataDir, "backup") });
  const hash = await new PasswordPool({ params }).hash(password);
  const db = openDb(path);
  try {
    db.exec("BEGIN");
    for (const id of ids) {
      createEndpoint(db, {
        id,
        name: id,
        remark: "",
        source: "admin",
        loginHash: hash,
        talkHash: null,
        defaultDelayMs: 0,
      }, Date.now());
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
  return home;
}

/**
 * Config for `n` clients that log in from 127.0.0.1 and stay idle (the idle benches): caps above
 * `n`, and the per-address shares and rates (issue 28) lifted to the bench's size.
 */
export function manyIdleClients(n: number) {
  return {
    limits: {
      max_clients: n + 100,
      max_connections_per_ip: n + 100,
      requests_per_second: 1000,
      max_unauthenticated_per_ip: n + 100,
      max_conn_rate_per_ip: 100_000,
      max_conn_rate: 100_000,
      max_http_connections_per_ip: 100_000,
      max_hash_queue: n + 100,
      max_hash_queue_per_ip: n + 100,
    },
    timeouts: { hello_seconds: 60, first_byte_seconds: 30, auth_seconds: 60 },
  };
}

/** CPU time and resident memory of a process, from /proc. */
export interface ProcSample {
  /** user + system CPU time of all threads, in ms. */
  cpuMs: number;
  /** The same for the main thread alone (the JS event loop; the writer Worker is another). */
  mainCpuMs: number;
  rssBytes: number;
}

let clockTicks = 0;

function cpuMsOf(statPath: string): number {
  const stat = Deno.readTextFileSync(statPath);
  // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
}

/** Reads /proc/<pid>/stat, /proc/<pid>/task/<pid>/stat and /proc/<pid>/status (Linux only). */
export function sampleProc(pid: number): ProcSample {
  if (clockTicks === 0) {
    const out = new Deno.Command("getconf", { args: ["CLK_TCK"] }).outputSync();
    clockTicks = Number(new TextDecoder().decode(out.stdout).trim()) || 100;
  }
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return {
    cpuMs: cpuMsOf(`/proc/${pid}/stat`),
    mainCpuMs: cpuMsOf(`/proc/${pid}/task/${pid}/stat`),
    rssBytes: rssKb * 1024,
  };
}

/** A running `nixmsg serve` child. */
export interface ChildServer {
  pid: number;
  port: number;
  /** Error and warning log lines seen so far (the plaintext-listener warning excepted). */
  problems: string[];
  stop(): Promise<number>;
  /** SIGKILL, without waiting (for a bench that gives up). */
  kill(): void;
}

/**
 * Starts `nixmsg serve` in `home` and resolves once it logs "nixmsg serving". `wrap` runs it under
 * another command that execs it, e.g. `["prlimit", "--nofile=65536:65536", "--"]` to raise its
 * open-files limit (the process id stays the server's).
 */
export async function startChildServer(
  home: TestHome,
  timeoutMs = 30_000,
  wrap: readonly string[] = [],
): Promise<ChildServer> {
  const command = wrap.length > 0 ? wrap[0] : Deno.execPath();
  const child = new Deno.Command(command, {
    args: [
      ...wrap.slice(1),
      ...(wrap.length > 0 ? [Deno.execPath()] : []),
      "run",
      "--quiet",
      ...DENO_PERMISSIONS,
      // NIXMSG_BENCH_INSPECT=host:port opens the V8 inspector there, for cpu_profile.ts.
      ...(Deno.env.get("NIXMSG_BENCH_INSPECT")
        ? [`--inspect=${Deno.env.get("NIXMSG_BENCH_INSPECT")}`]
        : []),
      // NIXMSG_BENCH_V8_FLAGS=... passes more V8 flags to the server (e.g. to compare GC
      // settings), after the shipped ones.
      ...(Deno.env.get("NIXMSG_BENCH_V8_FLAGS")
        ? [`--v8-flags=${Deno.env.get("NIXMSG_BENCH_V8_FLAGS")}`]
        : []),
      "--config",
      join(ROOT, "deno.json"),
      join(ROOT, "server/main.ts"),
      "serve",
    ],
    env: home.env,
    cwd: home.dir,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const problems: string[] = [];
  let serving: () => void = () => {};
  const started = new Promise<void>((r) => (serving = r));
  const out = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        // NIXMSG_BENCH_STDOUT=file keeps the server's raw stdout, e.g. the lines of
        // NIXMSG_BENCH_V8_FLAGS=--trace-gc-nvp.
        if (STDOUT_COPY) Deno.writeTextFileSync(STDOUT_COPY, line + "\n", { append: true });
        if (line.includes('"nixmsg serving"')) serving();
        if (/"level":"(warn|error)"/.test(line) && !line.includes("No TLS certificate")) {
          problems.push(line);
        }
      }
    }
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    started.then(() => "serving"),
    child.status.then(() => "exited"),
    new Promise((r) => (timer = setTimeout(() => r("timeout"), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome !== "serving") {
    child.kill("SIGKILL");
    await child.status.catch(() => {});
    throw new Error(`Server did not start (${outcome}): ${problems.join("\n")}`);
  }
  const addr = (await Deno.readTextFile(join(home.dataDir, "listen.addr"))).trim();
  return {
    pid: child.pid,
    port: Number(addr.slice(addr.lastIndexOf(":") + 1)),
    problems,
    async stop() {
      child.kill("SIGTERM");
      const s = await child.status;
      await out;
      return s.code;
    },
    kill() {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    },
  };
}

/**
 * One endpoint's connection for load generation: MQTT.js, QoS 1, frames handed to `onFrame`,
 * responses matched by rid. Keeps no history, so it can run for hours.
 */
export class LoadClient {
  readonly id: string;
  readonly mqtt: MqttClient;
  onFrame: (f: Frame) => void = () => {};
  onClose: () => void = () => {};
  #rid = 0;
  #waiting = new Map<string, (f: Frame) => void>();
  #up: string;

  private constructor(id: string, client: MqttClient) {
    this.id = id;
    this.mqtt = client;
    this.#up = `nix/c/${id}/up`;
    client.on("message", (_topic, payload) => {
      const f = JSON.parse(new TextDecoder().decode(payload)) as Frame;
      if (f.type === "resp") {
        const w = this.#waiting.get(f.rid as string);
        if (w) {
          this.#waiting.delete(f.rid as string);
          w(f);
          return;
        }
      }
      this.onFrame(f);
    });
    client.on("close", () => this.onClose());
  }

  /** Connects with a password, subscribes to the down topic and completes `hello`. */
  static async open(url: string, id: string, password: string): Promise<LoadClient> {
    const client = mqtt.connect(url, {
      clientId: id,
      username: id,
      password,
      protocolVersion: 5,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: 30_000,
      keepalive: 60,
      properties: { sessionExpiryInterval: 0 },
    });
    // TCP_NODELAY for mqtt:// and one frame per packet for ws://, as the SDKs do.
    tuneBenchStream(client, url);
    await new Promise<void>((resolve, reject) => {
      client.once("connect", () => resolve());
      client.once("error", reject);
      client.once("close", () => reject(new Error(`${id}: closed before CONNACK`)));
    });
    client.removeAllListeners("error");
    client.on("error", () => {});
    const c = new LoadClient(id, client);
    await client.subscribeAsync(`nix/c/${id}/down`, { qos: 1 });
    const hello = await c.request({ type: "hello", client: "bench/0" });
    if (hello.ok !== true) throw new Error(`${id}: hello failed ${JSON.stringify(hello)}`);
    return c;
  }

  /** Publishes a request (adds v and rid); the promise settles with its `resp`. */
  request(frame: Record<string, unknown>): Promise<Frame> {
    const rid = `${++this.#rid}`;
    return new Promise((resolve, reject) => {
      this.#waiting.set(rid, resolve);
      this.mqtt.publish(this.#up, JSON.stringify({ v: 1, rid, ...frame }), { qos: 1 }, (err) => {
        if (!err) return;
        this.#waiting.delete(rid);
        reject(err);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.mqtt.end(true, {}, () => resolve()));
  }
}

/** The p-th percentile (0..100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
