// Load benchmark of the messaging core (spec 13 压测): a real `nixmsg serve` child process on
// loopback, MQTT.js clients in this process. Every message is sent, delivered, acked and its
// `accepted` receipt confirmed with receipt_ack; anything else counts as a failure.
//
//   deno run -A tests/bench/messaging_load.ts [flags]
//     --seconds N       how long to send (default 60); the run then drains for up to 30 s
//     --connections N   connections held, half senders and half receivers (default 1000)
//     --rate N          messages per second, paced (default 200); 0 = as fast as --window allows
//     --window N        with --rate 0: messages each sender keeps in flight (default 8)
//     --body N          body bytes (default 1024)
//     --transport ws|tcp  (default ws)
//     --sync FULL|NORMAL  sqlite_synchronous (default FULL)
//     --store sqlite|postgres  the server's store (default sqlite); postgres makes a fresh
//                       database on the PostgreSQL of NIXMSG_BENCH_POSTGRES_URL (an admin URL; on
//                       this machine, so its CPU is counted too) and drops it afterwards
//     --latency-ms N    through toxiproxy with this latency each way (default 0: direct)
//     --jitter-ms N     the latency toxic's jitter (default 0)
//     --sample-seconds N  RSS/CPU sample period (default 5); the series is printed
//     --warmup-seconds N  RSS growth is judged after this (default 60)
//     --baseline        with --rate 0: afterwards relay the same shape through bare aedes 2 in
//                       its own process (_aedes_relay.ts) and print both figures and the ratio
//
// (a) the spec's bar:  --seconds 600 --connections 1000 --rate 200
// (c) the soak (issue 14 item 7): --seconds 600 --connections 1000 --rate 200 --latency-ms 20
//     --jitter-ms 5 --sample-seconds 10
// (b) max throughput:  --seconds 30 --connections 100 --rate 0 --window 32 --transport tcp
//
// The clients send one WebSocket frame per MQTT packet, as the SDKs and browsers do
// (NIXMSG_BENCH_STOCK_WS=1: MQTT.js's stock transport, several frames per packet).
// NIXMSG_BENCH_SERVER_ROOT=<other checkout> runs that checkout's server under the same load
// generator (before/after comparisons); NIXMSG_BENCH_INSPECT=127.0.0.1:9229 opens the server's
// V8 inspector for tests/bench/cpu_profile.ts, and with it --alloc reports the server main thread's
// allocations per message.
//
// Latency is measured from the `send` publish to the `msg` arriving at the receiver (and to the
// `resp` and the receipt); sender and receiver share this process's clock. Server CPU and RSS
// come from /proc of the child; figures and their reading are in docs/BENCHMARKS.md.
import { parseArgs } from "node:util";
import process from "node:process";
import { runAedesRelay } from "./_aedes_relay.ts";
import {
  LoadClient,
  percentile,
  type ProcSample,
  sampleProc,
  startChildServer,
} from "./_load_util.ts";
import { Toxiproxy } from "./_toxiproxy.ts";
import { AllocationSampler, mainTarget } from "./_inspector.ts";
import { benchHome } from "./_pg_bench.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "60" },
    connections: { type: "string", default: "1000" },
    rate: { type: "string", default: "200" },
    window: { type: "string", default: "8" },
    body: { type: "string", default: "1024" },
    transport: { type: "string", default: "ws" },
    sync: { type: "string", default: "FULL" },
    store: { type: "string", default: "sqlite" },
    "latency-ms": { type: "string", default: "0" },
    "jitter-ms": { type: "string", default: "0" },
    "sample-seconds": { type: "string", default: "5" },
    "warmup-seconds": { type: "string", default: "60" },
    baseline: { type: "boolean", default: false },
    alloc: { type: "boolean", default: false },
  },
});
const INSPECT = Deno.env.get("NIXMSG_BENCH_INSPECT");
if (flags.alloc && !INSPECT) {
  console.error("--alloc samples the server's allocations through NIXMSG_BENCH_INSPECT=host:port");
  Deno.exit(2);
}
const SECONDS = Number(flags.seconds);
const PAIRS = Math.max(1, Math.floor(Number(flags.connections) / 2));
const RATE = Number(flags.rate);
const WINDOW = Math.max(1, Number(flags.window));
const BODY = "x".repeat(Number(flags.body));
const DRAIN_MS = 30_000;
const PROGRESS_MS = 30_000;
const PASSWORD = "bench-password-1";

const senders = Array.from({ length: PAIRS }, (_, i) => `s${i}`);
const receivers = Array.from({ length: PAIRS }, (_, i) => `r${i}`);
const homeConfig = {
  log: { level: "info" },
  // A login waits for its password hash; on a loaded machine 3 s (the default) was seen to run
  // out while a hundred connect at once (closed before CONNACK).
  timeouts: { auth_seconds: 60, hello_seconds: 60 },
  sqlite_synchronous: flags.sync,
  limits: {
    max_clients: PAIRS * 2 + 100,
    // All from 127.0.0.1 (issue 28): the per-address shares and rates at the bench's size.
    max_unauthenticated_per_ip: 100_000,
    max_conn_rate_per_ip: 100_000,
    max_conn_rate: 100_000,
    max_http_connections_per_ip: 100_000,
    max_hash_queue: 100_000,
    max_hash_queue_per_ip: 100_000,
    requests_per_second: 1_000_000,
    max_pending_per_sender: 0,
    max_pending_per_receiver: 0,
  },
};
const { home, pgDb } = await benchHome(
  flags.store,
  homeConfig,
  [...senders, ...receivers],
  PASSWORD,
);
const server = await startChildServer(home);
// Whatever happens (a hung close, a stuck server), the run ends by itself.
const watchdog = setTimeout(() => {
  console.error("messaging_load: watchdog fired, giving up");
  server.kill();
  Deno.exit(2);
}, (SECONDS + DRAIN_MS / 1000 + 180) * 1000);
Deno.unrefTimer(watchdog);
const LATENCY = Number(flags["latency-ms"]);
let toxi: Toxiproxy | null = null;
let target = `127.0.0.1:${server.port}`;
if (LATENCY > 0) {
  toxi = await Toxiproxy.start();
  target = await toxi.proxy("nixmsg", target);
  await toxi.latency("nixmsg", LATENCY, Number(flags["jitter-ms"]));
}
const url = flags.transport === "tcp" ? `mqtt://${target}` : `ws://${target}/mqtt`;

interface Track {
  sentAt: number;
  respAt: number;
  deliveredAt: number;
  doneAt: number;
  pair: number;
}

const tracks = new Map<string, Track>();
const stats = {
  sent: 0,
  respOk: 0,
  delivered: 0,
  done: 0,
  duplicates: 0,
  /** Messages pushed before an earlier message of the same sender (spec 7.5 order). */
  reordered: 0,
  errors: [] as string[],
  closed: 0,
};
const inflightPerPair = new Array<number>(PAIRS).fill(0);
/** The number of the last message each pair's receiver got, to check the push order. */
const lastPushed = new Array<number>(PAIRS).fill(-1);
let sending = true;
let closing = false;
let nextId = 0;
const runId = crypto.randomUUID().slice(0, 8);

function fail(what: string): void {
  if (stats.errors.length < 20) stats.errors.push(what);
  else stats.errors.length++;
}

// --- connect ---------------------------------------------------------------------------------
const t0 = performance.now();
const clients: LoadClient[] = [];
const ids = [...senders, ...receivers];
for (let i = 0; i < ids.length; i += 50) {
  clients.push(
    ...await Promise.all(ids.slice(i, i + 50).map((id) => LoadClient.open(url, id, PASSWORD))),
  );
}
const connectMs = performance.now() - t0;
const senderClients = clients.slice(0, PAIRS);
const receiverClients = clients.slice(PAIRS);
for (const c of clients) {
  c.onClose = () => {
    if (!closing) {
      stats.closed++;
      fail(`${c.id} disconnected`);
    }
  };
}

// Receiver: every msg is acked; a second msg with the same id is a duplicate (spec 6.3).
for (const r of receiverClients) {
  r.onFrame = (f) => {
    if (f.type !== "msg") return fail(`${r.id}: unexpected ${f.type}`);
    const t = tracks.get(f.id as string);
    if (!t) return fail(`${r.id}: unknown msg ${f.id}`);
    if (t.deliveredAt > 0) stats.duplicates++;
    else {
      const n = Number(String(f.id).slice(runId.length + 1));
      if (n < lastPushed[t.pair]) stats.reordered++;
      lastPushed[t.pair] = n;
      t.deliveredAt = performance.now();
      stats.delivered++;
    }
    r.request({ type: "ack", from: f.from, id: f.id }).then((resp) => {
      const result = (resp.data as { result?: string } | undefined)?.result;
      if (resp.ok !== true || result !== "accepted") fail(`ack ${f.id}: ${JSON.stringify(resp)}`);
    }, (err) => fail(`ack ${f.id}: ${err}`));
  };
}

// Sender: the accepted receipt ends a message; it is confirmed with receipt_ack.
for (const s of senderClients) {
  s.onFrame = (f) => {
    if (f.type !== "receipt") return fail(`${s.id}: unexpected ${f.type}`);
    s.request({ type: "receipt_ack", receipt_id: f.receipt_id }).then((resp) => {
      if (resp.ok !== true) fail(`receipt_ack ${f.receipt_id}: ${JSON.stringify(resp)}`);
    }, (err) => fail(`receipt_ack: ${err}`));
    const t = tracks.get(f.id as string);
    if (!t || t.doneAt > 0) return fail(`${s.id}: stray or repeated receipt ${f.id}`);
    if (f.state !== "accepted") fail(`${f.id}: receipt ${f.state}/${f.reason}`);
    t.doneAt = performance.now();
    stats.done++;
    inflightPerPair[t.pair]--;
    if (RATE === 0 && sending) sendOne(t.pair);
  };
}

function sendOne(pair: number): void {
  const id = `${runId}-${nextId++}`;
  const t: Track = { sentAt: performance.now(), respAt: 0, deliveredAt: 0, doneAt: 0, pair };
  tracks.set(id, t);
  stats.sent++;
  inflightPerPair[pair]++;
  senderClients[pair].request({
    type: "send",
    id,
    to: { kind: "endpoint", id: receivers[pair] },
    body: { enc: "utf8", data: BODY },
    delay_ms: 0,
  }).then((resp) => {
    t.respAt = performance.now();
    if (resp.ok === true) stats.respOk++;
    else fail(`send ${id}: ${JSON.stringify(resp.error)}`);
  }, (err) => fail(`send ${id}: ${err}`));
}

// --- load ------------------------------------------------------------------------------------
const samples: ({ at: number } & ProcSample)[] = [];
const sample = () => samples.push({ at: performance.now(), ...sampleProc(server.pid) });
const loadCpu0 = process.cpuUsage();
const toxiCpu0 = toxi ? sampleProc(toxi.pid).cpuMs : 0;
// PostgreSQL's own CPU over the send phase, like the server's (0 with SQLite: in the server).
const pgCpu0 = pgDb?.cpuMs() ?? 0;
const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
const loadavgStart = loadavg();
sample();
// --alloc: what the server's main thread allocates during the send phase (V8's sampling heap
// profiler; it slows the server a little, so take CPU figures from runs without it).
const allocSampler = flags.alloc ? await AllocationSampler.start(await mainTarget(INSPECT!)) : null;
const start = performance.now();
let pacer: ReturnType<typeof setInterval> | undefined;
if (RATE > 0) {
  let pair = 0;
  pacer = setInterval(() => {
    const due = Math.floor(((performance.now() - start) / 1000) * RATE) - stats.sent;
    for (let i = 0; i < due; i++) {
      sendOne(pair);
      pair = (pair + 1) % PAIRS;
    }
  }, 5);
} else {
  for (let p = 0; p < PAIRS; p++) for (let w = 0; w < WINDOW; w++) sendOne(p);
}
const sampler = setInterval(sample, Number(flags["sample-seconds"]) * 1000);
let lastDone = 0;
const progress = setInterval(() => {
  const s = sampleProc(server.pid);
  console.error(
    `t=${((performance.now() - start) / 1000).toFixed(0)}s sent=${stats.sent} ` +
      `done=${stats.done} (+${((stats.done - lastDone) / (PROGRESS_MS / 1000)).toFixed(0)}/s) ` +
      `errors=${stats.errors.length} rss=${(s.rssBytes / 2 ** 20).toFixed(0)}MiB`,
  );
  lastDone = stats.done;
}, PROGRESS_MS);

await new Promise((r) => setTimeout(r, SECONDS * 1000));
sending = false;
clearInterval(pacer);
const sendEnd = performance.now();
const doneAtSendEnd = stats.done;
const alloc = allocSampler ? await allocSampler.stop(5) : null;
sample();
const pgCpuMs = (pgDb?.cpuMs() ?? 0) - pgCpu0;
const drainUntil = performance.now() + DRAIN_MS;
while (stats.done < stats.sent && performance.now() < drainUntil) {
  await new Promise((r) => setTimeout(r, 100));
}
const drainMs = performance.now() - sendEnd;
clearInterval(sampler);
clearInterval(progress);
const loadCpu = process.cpuUsage(loadCpu0);
const toxiCpu = toxi ? (sampleProc(toxi.pid).cpuMs - toxiCpu0) / (performance.now() - start) : 0;

// --- report ----------------------------------------------------------------------------------
const all = [...tracks.values()];
const sorted = (xs: number[]) => xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
const deliver = sorted(all.filter((t) => t.deliveredAt > 0).map((t) => t.deliveredAt - t.sentAt));
const resp = sorted(all.filter((t) => t.respAt > 0).map((t) => t.respAt - t.sentAt));
const done = sorted(all.filter((t) => t.doneAt > 0).map((t) => t.doneAt - t.sentAt));
const lat = (xs: number[]) =>
  `p50 ${percentile(xs, 50).toFixed(1)} ms, p99 ${percentile(xs, 99).toFixed(1)} ms, ` +
  `max ${percentile(xs, 100).toFixed(1)} ms`;
const loadSamples = samples.filter((s) => s.at <= sendEnd + 1);
const first = loadSamples[0];
const last = loadSamples[loadSamples.length - 1];
const serverCpu = (last.cpuMs - first.cpuMs) / (last.at - first.at);
const mainCpu = (last.mainCpuMs - first.mainCpuMs) / (last.at - first.at);
const rss = samples.map((s) => s.rssBytes);
// RSS growth after warm-up: the mean of the last third of the samples against the first third.
const warm = samples.filter((x) => x.at - start >= Number(flags["warmup-seconds"]) * 1000);
const third = Math.max(1, Math.floor(warm.length / 3));
const mean = (xs: typeof samples) => xs.reduce((a, x) => a + x.rssBytes, 0) / xs.length;
const growth = warm.length >= 3
  ? `${((mean(warm.slice(-third)) / mean(warm.slice(0, third)) - 1) * 100).toFixed(1)} %`
  : "n/a (run shorter than the warm-up)";
const failures = (stats.sent - stats.done) + stats.errors.length + stats.duplicates +
  stats.reordered;
const cpuMsDuringSend = last.cpuMs - first.cpuMs;
const doneInWindow = doneAtSendEnd;
const sendSeconds = (sendEnd - start) / 1000;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

console.log([
  `messaging_load: ${PAIRS * 2} connections (${flags.transport}), ` +
  (RATE > 0 ? `${RATE} msg/s paced` : `closed loop, window ${WINDOW} per sender`) +
  `, ${flags.body} B bodies, store ${flags.store}` +
  (flags.store === "sqlite" ? `, sqlite_synchronous=${flags.sync}` : "") + `, ${SECONDS} s`,
  `  connect+hello of all clients: ${(connectMs / 1000).toFixed(1)} s`,
  `  sent ${stats.sent}, send ok ${stats.respOk}, delivered ${stats.delivered}, ` +
  `receipted ${stats.done}, duplicates ${stats.duplicates}, out of order ${stats.reordered}, ` +
  `disconnects ${stats.closed}`,
  `  throughput (receipted during the send phase): ` +
  `${(doneAtSendEnd / sendSeconds).toFixed(1)} msg/s; drain ${(drainMs / 1000).toFixed(1)} s`,
  `  send -> resp:     ${lat(resp)}`,
  `  send -> deliver:  ${lat(deliver)}`,
  `  send -> receipt:  ${lat(done)}`,
  `  server CPU ${(serverCpu * 100).toFixed(0)} % of one core ` +
  `(main thread ${(mainCpu * 100).toFixed(0)} %); RSS start ${mib(rss[0])}, ` +
  `max ${mib(Math.max(...rss))}, end ${mib(rss[rss.length - 1])}`,
  `  server CPU per receipted message: ${
    ((cpuMsDuringSend * 1000) / Math.max(1, doneInWindow)).toFixed(0)
  } µs (all threads, send phase)`,
  ...(pgDb !== null
    ? [
      `  PostgreSQL server CPU ${
        (pgCpuMs / (last.at - first.at) * 100).toFixed(0)
      } % of one core; ` +
      `server + PostgreSQL CPU per receipted message: ${
        (((cpuMsDuringSend + pgCpuMs) * 1000) / Math.max(1, doneInWindow)).toFixed(0)
      } µs (send phase)`,
    ]
    : []),
  ...(alloc
    ? [
      `  server main-thread allocation per receipted message: ${
        (alloc.bytes / 1024 / Math.max(1, doneAtSendEnd)).toFixed(1)
      } KiB (sampled, send phase); most from ` +
      alloc.sites.map(([k, b]) => `${k} ${(100 * b / alloc.bytes).toFixed(0)} %`).join(", "),
    ]
    : []),
  `  load generator CPU ${
    (((loadCpu.user + loadCpu.system) / 1000 / (performance.now() - start)) * 100).toFixed(0)
  } % of one core`,
  `  machine load average at start ${loadavgStart}, at end ${loadavg()} (2 cores)`,
  `  RSS growth after ${flags["warmup-seconds"]} s warm-up (last third vs first third): ${growth}`,
  `  RSS series (MiB, every ${flags["sample-seconds"]} s): ` +
  samples.map((x) => (x.rssBytes / 2 ** 20).toFixed(0)).join(" "),
  LATENCY > 0
    ? `  through toxiproxy, latency ${LATENCY} ms jitter ${flags["jitter-ms"]} ms each way ` +
      `(toxiproxy CPU ${(toxiCpu * 100).toFixed(0)} % of one core)`
    : `  direct (no proxy)`,
  `  server warnings/errors logged: ${server.problems.length}`,
  `  FAILURES: ${failures}`,
  // One line for tests/bench/stores.ts.
  `messaging_load_json ${
    JSON.stringify({
      store: flags.store,
      msgPerSec: doneAtSendEnd / sendSeconds,
      respP99: percentile(resp, 99),
      deliverP50: percentile(deliver, 50),
      deliverP99: percentile(deliver, 99),
      receiptP99: percentile(done, 99),
      serverUsPerMsg: (cpuMsDuringSend * 1000) / Math.max(1, doneInWindow),
      pgUsPerMsg: (pgCpuMs * 1000) / Math.max(1, doneInWindow),
      failures,
      loadavgStart,
    })
  }`,
  ...stats.errors.filter(Boolean).map((e) => `    ${e}`),
  ...server.problems.slice(0, 10).map((p) => `    server: ${p}`),
].join("\n"));

closing = true;
await Promise.all(clients.map((c) => c.close()));
const code = await server.stop();
await toxi?.stop();
await home.cleanup();
await pgDb?.drop();
if (flags.baseline && RATE === 0) {
  const nix = doneAtSendEnd / sendSeconds;
  const base = await runAedesRelay({
    pairs: PAIRS,
    window: WINDOW,
    body: BODY,
    seconds: SECONDS,
    transport: flags.transport === "tcp" ? "tcp" : "ws",
  });
  console.log([
    `bare aedes 2 relay, same shape, own process: ${base.msgPerSec.toFixed(1)} msg/s, ` +
    `${base.cpuUsPerMsg.toFixed(0)} µs CPU per message, out of order ${base.reordered}`,
    `  ratio NixMsg / bare aedes: ${(nix / base.msgPerSec).toFixed(2)}× throughput, ` +
    `machine load average now ${loadavg()}`,
  ].join("\n"));
}
Deno.exit(failures === 0 && code === 0 ? 0 : 1);
