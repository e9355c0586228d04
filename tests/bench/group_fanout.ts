// Group fan-out benchmark (spec 13 压测 "1000 人群发一条，5 秒内全部入推送队列", spec 7.5 big-frame
// limit): a real `nixmsg serve` child process on loopback, one sender and N recipients in one
// group, every recipient connected over WebSocket with MQTT.js in this process. Each round sends
// one message to the group; every recipient acks it and the sender confirms every receipt. The
// run is bounded (each round has a deadline) and stops by itself.
//
//   deno run -A tests/bench/group_fanout.ts [flags]
//     --recipients N   group members besides the sender (default 1000, so the group has N + 1)
//     --rounds N       rounds with a small body (default 5)
//     --body N         small body bytes (default 1024)
//     --big-rounds N   rounds with a 256 KiB body, server RSS sampled (default 3)
//     --create-online  create the group after all recipients are online: N x (N + 1)
//                      `member_added` events (spec 6.7); measures their spread and the server's
//                      responsiveness meanwhile (another client's request round trip)
//     --store sqlite|postgres  the server's store (default sqlite); postgres as in
//                      messaging_load.ts (NIXMSG_BENCH_POSTGRES_URL; tests/bench/stores.ts sets
//                      it), and the PostgreSQL server's CPU is counted per round too
//
// Figures per round, from the `send` publish: resp (dispatch committed, every delivery queued
// for push), first and last `msg` arrival, last `ack` resp (all recipients acked), last receipt
// at the sender.
import { parseArgs } from "node:util";
import { type Frame, LoadClient, percentile, sampleProc, startChildServer } from "./_load_util.ts";
import { benchHome } from "./_pg_bench.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    recipients: { type: "string", default: "1000" },
    rounds: { type: "string", default: "5" },
    body: { type: "string", default: "1024" },
    "big-rounds": { type: "string", default: "3" },
    "create-online": { type: "boolean", default: false },
    store: { type: "string", default: "sqlite" },
  },
});
const N = Math.max(1, Number(flags.recipients));
const ROUNDS = Math.max(0, Number(flags.rounds));
const BIG_ROUNDS = Math.max(0, Number(flags["big-rounds"]));
const SMALL_BODY = "x".repeat(Number(flags.body));
const BIG_BODY = "y".repeat(256 * 1024); // spec 6.2: max_body_bytes, 256 KiB
const ROUND_DEADLINE_MS = 60_000;
const PASSWORD = "bench-password-1";
const SENDER = "owner";
const GROUP = "g_fanout";

const recipients = Array.from({ length: N }, (_, i) => `m${String(i).padStart(4, "0")}`);
const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
const { home, pgDb } = await benchHome(
  flags.store,
  {
    log: { level: "info" },
    // A login waits for its password hash; on a loaded machine 3 s (the default) was seen to
    // run out while hundreds connect at once (closed before CONNACK).
    timeouts: { auth_seconds: 60, hello_seconds: 60 },
    limits: {
      max_clients: N + 100,
      // All from 127.0.0.1 (issue 28): the per-address shares and rates at the bench's size.
      max_unauthenticated_per_ip: 100_000,
      max_conn_rate_per_ip: 100_000,
      max_conn_rate: 100_000,
      max_http_connections_per_ip: 100_000,
      max_hash_queue: 100_000,
      max_hash_queue_per_ip: 100_000,
      max_group_members: N + 1,
      requests_per_second: 1_000_000,
      max_pending_per_sender: 0,
      max_pending_per_receiver: 0,
    },
  },
  [SENDER, ...recipients],
  PASSWORD,
);
const server = await startChildServer(home);
const url = `ws://127.0.0.1:${server.port}/mqtt`;
const errors: string[] = [];
const fail = (what: string) => errors.length < 20 ? errors.push(what) : errors.length++;
const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;

/** VmRSS and VmHWM of the child in KiB, from /proc/<pid>/status (Linux only). */
function memKb(): { rss: number; hwm: number } {
  const s = Deno.readTextFileSync(`/proc/${server.pid}/status`);
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rss: field("VmRSS"), hwm: field("VmHWM") };
}

/** Resets the child's VmHWM to its current RSS; false when the kernel refuses. */
function resetPeak(): boolean {
  try {
    Deno.writeTextFileSync(`/proc/${server.pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

// --- setup: the group is created while only the sender is online, then everyone connects -------
// (with --create-online the other way round).
const owner = await LoadClient.open(url, SENDER, PASSWORD);
const members: LoadClient[] = [];
async function connectMembers(): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < N; i += 50) {
    const batch = recipients.slice(i, i + 50).map((id) => LoadClient.open(url, id, PASSWORD));
    members.push(...await Promise.all(batch));
  }
  return performance.now() - start;
}
async function createGroup(): Promise<number> {
  const start = performance.now();
  const created = await owner.request({
    type: "group.create",
    id: GROUP,
    name: "fan-out",
    members: recipients.map((id) => ({ id })),
  });
  const added = (created.data as { added?: string[] } | undefined)?.added?.length ?? 0;
  if (created.ok !== true || added !== N) {
    throw new Error(`group.create failed: ${JSON.stringify(created).slice(0, 300)}`);
  }
  return performance.now() - start;
}
let createMs = 0;
let connectMs = 0;
let onlineCreate = "";
if (flags["create-online"]) {
  connectMs = await connectMembers();
  onlineCreate = await createWhileOnline();
} else {
  createMs = await createGroup();
  connectMs = await connectMembers();
}

/** group.create with everyone online: resp, event spread, probe round trips, server RSS. */
async function createWhileOnline(): Promise<string> {
  const expected = N * (N + 1);
  let events = 0;
  let lastEventAt = 0;
  for (const c of [owner, ...members]) {
    c.onFrame = (f) => {
      if (f.type !== "group_event") return;
      events++;
      lastEventAt = performance.now();
    };
  }
  const rtts: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const at = performance.now();
      await members[N - 1].request({ type: "presence.get", ids: [SENDER] });
      rtts.push(performance.now() - at);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const rss0 = memKb().rss;
  const peakReset = resetPeak();
  const start = performance.now();
  createMs = await createGroup();
  // Bounded: stop when every event is in or nothing arrived for 5 s.
  let seen = -1;
  while (events < expected && events !== seen) {
    seen = events;
    await new Promise((r) => setTimeout(r, 5000));
  }
  probing = false;
  await probe;
  if (events < expected) fail(`member_added: ${events} of ${expected} arrived`);
  rtts.sort((a, b) => a - b);
  return `  group.create with everyone online: resp ${createMs.toFixed(0)} ms, ` +
    `${events} of ${expected} member_added events, the last after ` +
    `${((lastEventAt - start) / 1000).toFixed(1)} s; another client's request meanwhile: median ` +
    `${percentile(rtts, 50).toFixed(0)} ms, max ${percentile(rtts, 100).toFixed(0)} ms ` +
    `(${rtts.length} probes); server RSS before ${mib(rss0)}, ` +
    `peak ${peakReset ? mib(memKb().hwm) : "n/a"}`;
}
let closing = false;
for (const c of [owner, ...members]) {
  c.onClose = () => closing || fail(`${c.id} disconnected`);
}

// --- one round ---------------------------------------------------------------------------------
interface Round {
  id: string;
  sentAt: number;
  respAt: number;
  arrivals: number[];
  acks: number[];
  receipts: number[];
  receiptAcks: number[];
  got: Set<string>;
  done: () => void;
}
let round: Round | null = null;
// A round ends when the sender's receipt_acks are answered too: they queue behind each other in
// the sender's serial request queue (spec 5), so the next send would otherwise wait for them.
const finished = (r: Round) =>
  r.respAt > 0 && r.acks.length === N && r.receipts.length === N && r.receiptAcks.length === N;

for (const m of members) {
  m.onFrame = (f: Frame) => {
    if (f.type !== "msg") return; // group_event and presence frames are not measured
    const r = round;
    if (!r || f.id !== r.id) return fail(`${m.id}: stray msg ${f.id}`);
    if (r.got.has(m.id)) return fail(`${m.id}: duplicate msg ${f.id}`);
    r.got.add(m.id);
    r.arrivals.push(performance.now());
    m.request({ type: "ack", from: f.from, id: f.id }).then((resp) => {
      const result = (resp.data as { result?: string } | undefined)?.result;
      if (resp.ok !== true || result !== "accepted") fail(`ack: ${JSON.stringify(resp)}`);
      r.acks.push(performance.now());
      if (finished(r)) r.done();
    }, (err) => fail(`ack: ${err}`));
  };
}
owner.onFrame = (f: Frame) => {
  if (f.type !== "receipt") return;
  const r = round;
  owner.request({ type: "receipt_ack", receipt_id: f.receipt_id }).then((resp) => {
    if (resp.ok !== true) fail(`receipt_ack: ${JSON.stringify(resp)}`);
    if (!r) return;
    r.receiptAcks.push(performance.now());
    if (finished(r)) r.done();
  }, (err) => fail(`receipt_ack: ${err}`));
  if (!r || f.id !== r.id) return fail(`stray receipt ${f.id}`);
  if (f.state !== "accepted") fail(`receipt ${f.endpoint_id}: ${f.state}/${f.reason}`);
  r.receipts.push(performance.now());
};

interface Result {
  body: number;
  resp: number;
  first: number;
  last: number;
  acked: number;
  receipted: number;
  confirmed: number;
  serverCpuMs: number;
  pgCpuMs: number;
}

async function runRound(n: number, body: string): Promise<Result | null> {
  let done: () => void = () => {};
  const complete = new Promise<void>((resolve) => (done = resolve));
  const r: Round = {
    id: `round-${n}-${crypto.randomUUID().slice(0, 8)}`,
    sentAt: 0,
    respAt: 0,
    arrivals: [],
    acks: [],
    receipts: [],
    receiptAcks: [],
    got: new Set(),
    done,
  };
  round = r;
  const cpu0 = sampleProc(server.pid).cpuMs;
  const pgCpu0 = pgDb?.cpuMs() ?? 0;
  r.sentAt = performance.now();
  owner.request({
    type: "send",
    id: r.id,
    to: { kind: "group", id: GROUP },
    body: { enc: "utf8", data: body },
    delay_ms: 0,
  }).then((resp) => {
    r.respAt = performance.now();
    if (resp.ok !== true) fail(`send: ${JSON.stringify(resp)}`);
    if (finished(r)) r.done();
  }, (err) => fail(`send: ${err}`));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = await Promise.race([
    complete.then(() => false),
    new Promise<boolean>((res) => (timer = setTimeout(() => res(true), ROUND_DEADLINE_MS))),
  ]);
  clearTimeout(timer);
  round = null;
  if (timedOut) {
    fail(
      `${r.id}: ${r.arrivals.length} arrived, ${r.acks.length} acked, ` +
        `${r.receipts.length} receipts, ${r.receiptAcks.length} confirmed after ` +
        `${ROUND_DEADLINE_MS} ms`,
    );
    return null;
  }
  const since = (xs: number[]) => xs.map((x) => x - r.sentAt).sort((a, b) => a - b);
  const arrivals = since(r.arrivals);
  return {
    body: body.length,
    resp: r.respAt - r.sentAt,
    first: arrivals[0],
    last: percentile(arrivals, 100),
    acked: percentile(since(r.acks), 100),
    receipted: percentile(since(r.receipts), 100),
    confirmed: percentile(since(r.receiptAcks), 100),
    serverCpuMs: sampleProc(server.pid).cpuMs - cpu0,
    pgCpuMs: (pgDb?.cpuMs() ?? 0) - pgCpu0,
  };
}

// --- rounds ------------------------------------------------------------------------------------
const loadavgStart = loadavg();
const results: Result[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const res = await runRound(i, SMALL_BODY);
  if (res) results.push(res);
}
const before = memKb();
const peakReset = resetPeak();
let sampledMaxKb = before.rss;
const sampler = setInterval(() => (sampledMaxKb = Math.max(sampledMaxKb, memKb().rss)), 10);
for (let i = 0; i < BIG_ROUNDS; i++) {
  const res = await runRound(ROUNDS + i, BIG_BODY);
  if (res) results.push(res);
}
clearInterval(sampler);
const after = memKb();

// --- report ------------------------------------------------------------------------------------
// One table row per round: milliseconds from the send publish, and the server's CPU time.
const cols = [
  "body B",
  "resp",
  "first msg",
  "last msg",
  "all acked",
  "receipts",
  "confirmed",
  "CPU",
  "PostgreSQL CPU",
];
const row = (r: Result) =>
  "  | " +
  [r.body, r.resp, r.first, r.last, r.acked, r.receipted, r.confirmed, r.serverCpuMs, r.pgCpuMs]
    .map((x, i) => x.toFixed(0).padStart(cols[i].length)).join(" | ") +
  " |";
console.log([
  `group_fanout: 1 sender + ${N} recipients over WebSocket, group ${GROUP} (${N + 1} members), ` +
  `store ${flags.store}; load average at the first round ${loadavgStart}, now ${loadavg()}`,
  `  group.create with ${N} members: ${createMs.toFixed(0)} ms; ` +
  `connect+hello of ${N} clients: ${(connectMs / 1000).toFixed(1)} s`,
  ...(onlineCreate ? [onlineCreate] : []),
  `  | ${cols.join(" | ")} |`,
  ...results.map(row),
  BIG_ROUNDS > 0
    ? `  server RSS with ${BIG_ROUNDS} x 256 KiB fan-out: before ${mib(before.rss)}, ` +
      `peak ${peakReset ? mib(after.hwm) + " (VmHWM, reset before)" : "n/a"}, ` +
      `sampled max ${mib(sampledMaxKb)} (10 ms), after ${mib(after.rss)}; ` +
      `VmHWM since start ${mib(Math.max(before.hwm, after.hwm))}`
    : "  (no big rounds)",
  `  server warnings/errors logged: ${server.problems.length}`,
  `  FAILURES: ${errors.length}`,
  ...errors.filter(Boolean).map((e) => `    ${e}`),
  ...server.problems.slice(0, 10).map((p) => `    server: ${p}`),
  // One line for tests/bench/stores.ts: the median of the small-body rounds.
  `group_fanout_json ${JSON.stringify(summary())}`,
].join("\n"));

/** Medians over the small-body rounds (ms from the send; CPU ms per round). */
function summary() {
  const small = results.filter((r) => r.body === SMALL_BODY.length);
  const median = (pick: (r: Result) => number) =>
    percentile(small.map(pick).sort((a, b) => a - b), 50);
  return {
    store: flags.store,
    rounds: small.length,
    resp: median((r) => r.resp),
    last: median((r) => r.last),
    acked: median((r) => r.acked),
    receipted: median((r) => r.receipted),
    confirmed: median((r) => r.confirmed),
    serverCpuMs: median((r) => r.serverCpuMs),
    pgCpuMs: median((r) => r.pgCpuMs),
    failures: errors.length,
    loadavgStart,
  };
}

closing = true;
await Promise.all([owner, ...members].map((c) => c.close()));
const code = await server.stop();
await home.cleanup();
await pgDb?.drop();
Deno.exit(errors.length === 0 && code === 0 ? 0 : 1);
