// One sender connection through the TypeScript SDK (issue 19, first target): an application
// server that pushes notifications to a device through one NixMsg connection. A real
// `nixmsg serve` child process on loopback; the sender and the receiver are `NixMsgClient`s of
// sdk/ts/src in this process.
//
//   deno run -A tests/bench/sdk_sender.ts [--seconds 15] [--in-flight 100] [--backlog 1000]
//     [--body 1024] [--transport websocket|tcp] [--devices 1] [--delivery-window N] [--baseline]
//
// - The sender keeps the SDK's send queue fed: at most `--in-flight` sends are published without
//   a `resp` (the SDK's `maxInFlight`), and at most `--backlog` messages are sent but not yet
//   receipted, so a run that outpaces delivery stays bounded in memory.
// - `--devices N` receivers (default 1) get the messages in turn, as when a backend notifies many
//   devices. Each receiver has its own delivery window (`limits.delivery_window`, 32 by default;
//   `--delivery-window` overrides it), so with one receiver the window, not the server's CPU,
//   bounds the rate.
// - Each receiver acks each message when its `onMessage` returns (the SDK's auto ack); every
//   message must arrive once and in order per receiver (spec 7.5), and the sender must get its
//   `accepted` receipt (the SDK confirms each with receipt_ack).
// - Throughput: accepted receipts per second during the send phase. Server CPU per message: user
//   + system time of the server process (all threads) over the send phase, per receipt.
// - `--baseline` then relays the same shape through bare aedes 2 in its own process
//   (_aedes_relay.ts, window = `--in-flight` messages) and prints the ratio.
import { parseArgs } from "node:util";
import { NixMsgClient } from "../../sdk/ts/src/index.ts";
import { runAedesRelay } from "./_aedes_relay.ts";
import { prepareHome, sampleProc, startChildServer } from "./_load_util.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "15" },
    "in-flight": { type: "string", default: "100" },
    backlog: { type: "string", default: "1000" },
    body: { type: "string", default: "1024" },
    transport: { type: "string", default: "websocket" },
    devices: { type: "string", default: "1" },
    "delivery-window": { type: "string" },
    baseline: { type: "boolean", default: false },
  },
});
const SECONDS = Number(flags.seconds);
const IN_FLIGHT = Number(flags["in-flight"]);
const BACKLOG = Math.max(IN_FLIGHT, Number(flags.backlog));
const BODY = "x".repeat(Number(flags.body));
const TCP = flags.transport === "tcp";
const DEVICES = Math.max(1, Math.floor(Number(flags.devices)));
const DEVICE_IDS = Array.from(
  { length: DEVICES },
  (_, i) => DEVICES === 1 ? "device" : `device${i}`,
);
const DELIVERY_WINDOW = flags["delivery-window"] === undefined
  ? {}
  : { delivery_window: Number(flags["delivery-window"]) };
const PASSWORD = "bench-password-1";
const DRAIN_MS = 30_000;

const home = await prepareHome(
  {
    log: { level: "info" },
    limits: {
      requests_per_second: 1_000_000,
      max_pending_per_sender: 0,
      max_pending_per_receiver: 0,
      ...DELIVERY_WINDOW,
    },
  },
  ["app", ...DEVICE_IDS],
  PASSWORD,
);
const server = await startChildServer(home);
const watchdog = setTimeout(() => {
  console.error("sdk_sender: watchdog fired, giving up");
  server.kill();
  Deno.exit(2);
}, (SECONDS + DRAIN_MS / 1000 + 120) * 1000);
Deno.unrefTimer(watchdog);
const url = TCP ? `mqtt://127.0.0.1:${server.port}` : `ws://127.0.0.1:${server.port}/mqtt`;

const errors: string[] = [];
const fail = (what: string) => {
  if (errors.length < 20) errors.push(what);
};
let delivered = 0;
let duplicates = 0;
let reordered = 0;
let receipted = 0;
let sent = 0;
let accepted = 0;
let sending = true;

const transport = TCP ? { transport: "tcp" as const } : {};
const seen = new Set<string>();
const devices = DEVICE_IDS.map((id) => {
  const device = NixMsgClient.connect(url, id, { password: PASSWORD }, transport);
  let lastN = -1;
  device.onMessage((m) => {
    if (seen.has(m.id)) duplicates++;
    seen.add(m.id);
    const n = Number(m.id.slice(1));
    if (n < lastN) reordered++;
    lastN = Math.max(lastN, n);
    delivered++;
  });
  return device;
});
const app = NixMsgClient.connect(url, "app", { password: PASSWORD }, {
  maxInFlight: IN_FLIGHT,
  queueCapacity: BACKLOG,
  ...transport,
});
let notify: () => void = () => {};
app.onReceipt((r) => {
  if (r.state !== "accepted") fail(`${r.id}: receipt ${r.state}/${r.reason}`);
  receipted++;
  pump();
  notify();
});
await Promise.all([app.ready(), ...devices.map((d) => d.ready())]);

function pump(): void {
  while (sending && sent - receipted < BACKLOG) {
    const to = DEVICE_IDS[sent % DEVICES];
    const id = `m${sent++}`;
    // The id carries the sequence number that the receivers' order check reads.
    app.send(to, BODY, { id, delay: 0, keep: true, ttl: 600 }).then(
      () => accepted++,
      (err) => fail(`send ${id}: ${(err as Error).message}`),
    );
  }
}

const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
const loadStart = loadavg();
const first = sampleProc(server.pid);
const start = performance.now();
pump();
await new Promise((r) => setTimeout(r, SECONDS * 1000));
const doneInWindow = receipted;
const last = sampleProc(server.pid);
const elapsed = (performance.now() - start) / 1000;
sending = false;
// Drain: every message sent must still be receipted (bounded).
await new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, DRAIN_MS);
  notify = () => {
    if (receipted >= sent) {
      clearTimeout(timer);
      resolve();
    }
  };
  notify();
});
const nix = doneInWindow / elapsed;
const failures = (sent - receipted) + (sent - delivered) + duplicates + reordered + errors.length;
console.log([
  `sdk_sender: one TypeScript SDK sender -> ${DEVICES} receiver(s) over ${flags.transport}, ` +
  `delivery window ${flags["delivery-window"] ?? "default (32)"}, ` +
  `${IN_FLIGHT} sends in flight, backlog ${BACKLOG}, ${flags.body} B bodies, ${SECONDS} s`,
  `  sent ${sent}, send ok ${accepted}, delivered ${delivered}, receipted ${receipted}, ` +
  `duplicates ${duplicates}, out of order ${reordered}`,
  `  throughput (accepted receipts during the send phase): ${nix.toFixed(1)} msg/s`,
  `  server CPU ${((last.cpuMs - first.cpuMs) / 10 / elapsed).toFixed(0)} % of one core ` +
  `(main thread ${((last.mainCpuMs - first.mainCpuMs) / 10 / elapsed).toFixed(0)} %)`,
  `  server CPU per receipted message: ${
    ((last.cpuMs - first.cpuMs) * 1000 / Math.max(1, doneInWindow)).toFixed(0)
  } µs (all threads)`,
  `  machine load average at start ${loadStart}, at end ${loadavg()} (2 cores)`,
  `  FAILURES: ${failures}`,
  ...errors.map((e) => `    ${e}`),
].join("\n"));
await Promise.all([app.close(), ...devices.map((d) => d.close())]);
const code = await server.stop();
await home.cleanup();
if (flags.baseline) {
  const base = await runAedesRelay({
    pairs: 1,
    window: IN_FLIGHT,
    body: BODY,
    seconds: SECONDS,
    transport: TCP ? "tcp" : "ws",
  });
  console.log([
    `bare aedes 2 relay, ${IN_FLIGHT} messages in flight, own process: ` +
    `${base.msgPerSec.toFixed(1)} msg/s, ${base.cpuUsPerMsg.toFixed(0)} µs CPU per message, ` +
    `out of order ${base.reordered}`,
    `  ratio NixMsg (SDK) / bare aedes: ${(nix / base.msgPerSec).toFixed(2)}× throughput, ` +
    `machine load average now ${loadavg()}`,
  ].join("\n"));
}
Deno.exit(failures === 0 && code === 0 ? 0 : 1);
