// NixMsg against its durable peer, NATS JetStream with `sync_interval: always` (fsync before every
// PubAck, as `sqlite_synchronous: FULL` commits before every `ok`), side by side (issue 33). One
// load generator drives both (tests/bench/jetstream_peer/: sdk/go over TCP and nats.go), in
// interleaved rounds, and this script prints the ratios, the server CPU per message (each
// server's /proc/<pid>/stat over the measured window) and the load average.
//
//   deno run -A tests/bench/jetstream_peer.ts [--rounds 3] [--shapes a,b,c] [--seconds 15]
//     [--messages 5000] [--paced-seconds 10] [--rate 200] [--body 1024] [--receipt] [--window N]
//
// Shapes: (a) 1 sender -> 1 receiver, 100 sends in flight, 5,000 messages; (b) 100 -> 100, 10 in
// flight each, 15 s; (c) 1 -> 1 paced at 200 msg/s for 10 s, p50/p99 send -> delivered. A message
// counts when the receiver's ack is confirmed. NixMsg sends without receipts (JetStream has none),
// unless --receipt asks for them, as the SDKs do by default. nats-server is built once into the tools cache by
// scripts/install_nats_server.sh; Go must be on PATH. Figures: docs/BENCHMARKS.md.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { prepareHome, startChildServer } from "./_load_util.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "3" },
    shapes: { type: "string", default: "a,b,c" },
    messages: { type: "string", default: "5000" },
    seconds: { type: "string", default: "15" },
    "paced-seconds": { type: "string", default: "10" },
    rate: { type: "string", default: "200" },
    body: { type: "string", default: "1024" },
    receipt: { type: "boolean", default: false },
    // Both at their defaults unless given: NixMsg's push window is 32 (spec 11.1), JetStream's
    // MaxAckPending 1,000. With --window both get N.
    window: { type: "string", default: "" },
  },
});
const ROUNDS = Number(flags.rounds);
const SHAPES = flags.shapes.split(",") as Shape[];
const PAIRS = 100;
const PASSWORD = "bench-password-1";
const REPO = new URL("../../", import.meta.url).pathname;

type Shape = "a" | "b" | "c";
type Target = "nixmsg" | "jetstream";

/** One JSON line of the load generator (tests/bench/jetstream_peer/main.go `result`). */
interface Result {
  target: Target;
  shape: Shape;
  msgs: number;
  seconds: number;
  rate: number;
  cpu_ms: number;
  cpu_us_per_msg: number;
  p50_ms?: number;
  p99_ms?: number;
  send_p50_ms?: number;
  done_p50_ms?: number;
  done_p99_ms?: number;
  sent: number;
  lost: number;
  duplicated: number;
  send_errors: number;
  load_before: string;
  load_after: string;
}

const SHAPE_ARGS: Record<Shape, string[]> = {
  a: ["-shape", "a", "-pairs", "1", "-inflight", "100", "-msgs", flags.messages],
  b: ["-shape", "b", "-pairs", String(PAIRS), "-inflight", "10", "-seconds", flags.seconds],
  c: ["-shape", "c", "-pairs", "1", "-rate", flags.rate, "-seconds", flags["paced-seconds"]],
};

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stderr: "inherit", stdout: "piped" })
    .output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed (${out.code})`);
  return new TextDecoder().decode(out.stdout).trim();
}

const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");

const natsBin = await run(join(REPO, "scripts/install_nats_server.sh"), []);
const work = await Deno.makeTempDir({ prefix: "nixmsg-jetstream-peer-" });
const loadgen = join(work, "loadgen");
await run("go", ["build", "-o", loadgen, "."], join(REPO, "tests/bench/jetstream_peer"));

// JetStream: file storage in the temp dir, fsync before every PubAck, loopback only.
await Deno.writeTextFile(
  join(work, "nats.conf"),
  `listen: 127.0.0.1:-1\njetstream {\n  store_dir: "${
    join(work, "js")
  }"\n  sync_interval: always\n}\n`,
);
const nats = new Deno.Command(natsBin, {
  args: ["-c", join(work, "nats.conf")],
  stdout: "null",
  stderr: "piped",
}).spawn();
const natsUrl = await (async () => {
  let buf = "";
  for await (const chunk of nats.stderr.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    const m = /Listening for client connections on ([\d.]+:\d+)/.exec(buf);
    if (m) return `nats://${m[1]}`;
  }
  throw new Error(`nats-server exited: ${buf}`);
})();
// Keep draining its log so that it never blocks on a full pipe.
nats.stderr.pipeTo(new WritableStream()).catch(() => {});

const ids = Array.from({ length: PAIRS }, (_, i) => [`s${i}`, `r${i}`]).flat();
const home = await prepareHome(
  {
    log: { level: "info" },
    sqlite_synchronous: "FULL",
    limits: {
      max_clients: PAIRS * 2 + 100,
      requests_per_second: 1_000_000,
      max_pending_per_sender: 0,
      max_pending_per_receiver: 0,
      ...(flags.window ? { delivery_window: Number(flags.window) } : {}),
    },
  },
  ids,
  PASSWORD,
);
const nix = await startChildServer(home);
const nixUrl = `mqtt://127.0.0.1:${nix.port}`;

const results: Result[] = [];
const loadStart = loadavg();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const shape of SHAPES) {
      // Interleaved, and the order flips each round, so drift in the machine's load hits both.
      const order: Target[] = round % 2 === 0 ? ["nixmsg", "jetstream"] : ["jetstream", "nixmsg"];
      for (const target of order) {
        const args = target === "nixmsg"
          ? [
            "-target",
            "nixmsg",
            "-url",
            nixUrl,
            "-password",
            PASSWORD,
            "-pid",
            String(nix.pid),
            `-receipt=${flags.receipt}`,
          ]
          : [
            "-target",
            "jetstream",
            "-url",
            natsUrl,
            "-pid",
            String(nats.pid),
            `-max-ack-pending=${flags.window || 0}`,
          ];
        const line = await run(loadgen, [
          ...args,
          ...SHAPE_ARGS[shape],
          "-body",
          flags.body,
          "-run",
          `r${round}${shape}${target[0]}`,
        ]);
        const r = JSON.parse(line) as Result;
        results.push(r);
        console.error(
          `round ${round + 1} ${shape} ${target}: ${r.rate.toFixed(0)} msg/s, ` +
            `${r.cpu_us_per_msg.toFixed(0)} µs CPU/msg` +
            (r.p50_ms !== undefined
              ? `, p50 ${r.p50_ms.toFixed(2)} p99 ${r.p99_ms!.toFixed(2)} ms`
              : "") +
            `, lost ${r.lost}, dup ${r.duplicated}, send errors ${r.send_errors}, load ${r.load_after}`,
        );
      }
    }
  }
} finally {
  await nix.stop();
  nats.kill("SIGTERM");
  await nats.status;
  await home.cleanup();
  await Deno.remove(work, { recursive: true });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const of = (shape: Shape, target: Target) =>
  results.filter((r) => r.shape === shape && r.target === target);
const med = (shape: Shape, target: Target, f: (r: Result) => number) =>
  median(of(shape, target).map(f));
const list = (shape: Shape, target: Target, f: (r: Result) => number, digits = 0) =>
  of(shape, target).map((r) => f(r).toFixed(digits)).join(", ");

const label: Record<Shape, string> = {
  a: `(a) 1 → 1, 100 in flight, ${flags.messages} msgs`,
  b: `(b) ${PAIRS} → ${PAIRS}, 10 in flight each, ${flags.seconds} s`,
  c: `(c) paced ${flags.rate} msg/s, ${flags["paced-seconds"]} s`,
};
console.log(
  `\nNixMsg vs NATS JetStream (sync_interval: always), ${ROUNDS} interleaved rounds, ` +
    `push window ${
      flags.window || "32 / MaxAckPending 1000 (defaults)"
    }, ${flags.body} B bodies, NixMsg receipts ${
      flags.receipt ? "on" : "off"
    }; medians, then each round`,
);
console.log(
  "| shape | NixMsg msg/s | NixMsg CPU µs/msg | JetStream msg/s | JetStream CPU µs/msg | ratio |",
);
console.log("|---|---:|---:|---:|---:|---:|");
for (const shape of SHAPES) {
  const n = med(shape, "nixmsg", (r) => r.rate);
  const j = med(shape, "jetstream", (r) => r.rate);
  console.log(
    `| ${label[shape]} | ${n.toFixed(0)} (${list(shape, "nixmsg", (r) => r.rate)}) | ` +
      `${med(shape, "nixmsg", (r) => r.cpu_us_per_msg).toFixed(0)} | ` +
      `${j.toFixed(0)} (${list(shape, "jetstream", (r) => r.rate)}) | ` +
      `${med(shape, "jetstream", (r) => r.cpu_us_per_msg).toFixed(0)} | ${(n / j).toFixed(2)}× |`,
  );
}
if (SHAPES.includes("c")) {
  console.log(
    "\n| paced latency | p50 ms | p99 ms | send answered p50 ms | ack done p50 ms | ack done p99 ms | CPU µs/msg |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const target of ["nixmsg", "jetstream"] as const) {
    console.log(
      `| ${target} | ${med("c", target, (r) => r.p50_ms ?? 0).toFixed(2)} ` +
        `(${list("c", target, (r) => r.p50_ms ?? 0, 2)}) | ` +
        `${med("c", target, (r) => r.p99_ms ?? 0).toFixed(2)} (${
          list("c", target, (r) => r.p99_ms ?? 0, 2)
        }) | ` +
        `${med("c", target, (r) => r.send_p50_ms ?? 0).toFixed(2)} | ` +
        `${med("c", target, (r) => r.done_p50_ms ?? 0).toFixed(2)} | ` +
        `${med("c", target, (r) => r.done_p99_ms ?? 0).toFixed(2)} | ` +
        `${med("c", target, (r) => r.cpu_us_per_msg).toFixed(0)} |`,
    );
  }
  for (const target of ["nixmsg", "jetstream"] as const) {
    const paced = med("c", target, (r) => r.cpu_us_per_msg);
    const sat = SHAPES.filter((s) => s !== "c").map((s) =>
      `${s}: ${(paced / med(s, target, (r) => r.cpu_us_per_msg)).toFixed(1)}×`
    );
    if (sat.length > 0) {
      console.log(`${target} CPU/msg at ${flags.rate} msg/s vs saturated: ${sat.join(", ")}`);
    }
  }
}
const lost = results.reduce((n, r) => n + r.lost, 0);
const dups = results.reduce((n, r) => n + r.duplicated, 0);
console.log(
  `\nlost ${lost}, duplicated ${dups}; load average at start ${loadStart}, at end ${loadavg()} (2 cores)`,
);
if (lost > 0) Deno.exit(1);
