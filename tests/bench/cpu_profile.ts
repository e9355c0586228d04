// Samples a CPU profile of a running `nixmsg serve` through the V8 inspector (this Deno has no
// `--cpu-prof`), from every inspector target: the main thread and each Worker (the writer, the
// checkpointer, the argon2 pool).
//
//   NIXMSG_BENCH_INSPECT=127.0.0.1:9229 deno run -A tests/bench/messaging_load.ts ... &
//   deno run -A tests/bench/cpu_profile.ts [--inspect 127.0.0.1:9229] [--delay 10] [--seconds 12]
//     [--out /tmp/nixmsg-prof] [--top 40]
//
// Waits --delay seconds (the load's warm-up), profiles for --seconds, then writes one
// `.cpuprofile` per target into --out (open them in Chrome DevTools) and prints, per target, the
// functions with the most self time and the share of each source area (server/app, server/store,
// node:sqlite, aedes, ws, GC, idle, ...).
import { parseArgs } from "node:util";
import { join } from "node:path";
import { Session, type Target } from "./_inspector.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    inspect: { type: "string", default: "127.0.0.1:9229" },
    delay: { type: "string", default: "10" },
    seconds: { type: "string", default: "12" },
    out: { type: "string", default: "/tmp/nixmsg-prof" },
    top: { type: "string", default: "40" },
    interval: { type: "string", default: "200" },
  },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The source area a frame belongs to, for the summary. */
function area(url: string, fn: string): string {
  if (fn === "(garbage collector)") return "GC";
  if (fn === "(idle)") return "idle";
  if (fn === "(program)") return "program (native, unattributed)";
  if (fn === "(root)") return "root";
  const m = url.match(/\/(server\/[a-z_]+|sdk\/[a-z]+)\//);
  if (m) return m[1];
  const npm = url.match(/node_modules\/(?:\.deno\/)?([^/@]+|@[^/]+\/[^/@]+)/) ??
    url.match(/npm\/registry\.npmjs\.org\/([^/]+)/);
  if (npm) return `npm:${npm[1]}`;
  if (url.startsWith("node:") || url.includes("ext:deno_node") || url.includes("ext:node")) {
    return "node compat";
  }
  if (url.startsWith("ext:")) return "deno runtime";
  if (url === "") return `native: ${fn || "(anonymous)"}`;
  return url;
}

function summarize(title: string, p: Profile, top: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
    total += dt;
  }
  const fnTime = new Map<string, number>();
  const areaTime = new Map<string, number>();
  for (const [id, t] of self) {
    const n = byId.get(id);
    if (!n) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const short = url.replace(/^.*\/(server|sdk|node_modules|registry\.npmjs\.org)\//, "$1/");
    const key = `${functionName || "(anonymous)"} ${short}:${lineNumber + 1}`;
    fnTime.set(key, (fnTime.get(key) ?? 0) + t);
    const a = area(url, functionName);
    areaTime.set(a, (areaTime.get(a) ?? 0) + t);
  }
  const pct = (t: number) => `${(100 * t / total).toFixed(1).padStart(5)} %`;
  console.log(`\n== ${title}: ${(total / 1e6).toFixed(1)} s sampled`);
  console.log("-- by area");
  for (const [a, t] of [...areaTime].sort((x, y) => y[1] - x[1]).slice(0, 25)) {
    console.log(`${pct(t)}  ${a}`);
  }
  console.log("-- by function (self time)");
  for (const [k, t] of [...fnTime].sort((x, y) => y[1] - x[1]).slice(0, top)) {
    console.log(`${pct(t)}  ${k}`);
  }
}

const base = `http://${flags.inspect}`;
const delayMs = Number(flags.delay) * 1000;
const seconds = Number(flags.seconds);
// The inspector comes up with the server; wait for it (bounded).
let targets: Target[] = [];
const deadline = Date.now() + 60_000 + delayMs;
while (Date.now() < deadline) {
  try {
    targets = await (await fetch(`${base}/json/list`)).json() as Target[];
    if (targets.length > 0) break;
  } catch {
    // Not listening yet.
  }
  await new Promise((r) => setTimeout(r, 250));
}
if (targets.length === 0) throw new Error(`no inspector at ${base}`);
await new Promise((r) => setTimeout(r, delayMs));
// Workers may have started meanwhile.
targets = await (await fetch(`${base}/json/list`)).json() as Target[];
console.log(`profiling ${targets.length} target(s) for ${seconds} s`);
const sessions = targets.map((t) => ({ t, s: new Session(t.webSocketDebuggerUrl) }));
for (const { s } of sessions) {
  await s.open;
  await s.call("Profiler.enable");
  await s.call("Profiler.setSamplingInterval", { interval: Number(flags.interval) });
  await s.call("Profiler.start");
}
await new Promise((r) => setTimeout(r, seconds * 1000));
await Deno.mkdir(flags.out, { recursive: true });
for (const [i, { t, s }] of sessions.entries()) {
  const r = await s.call<{ profile: Profile }>("Profiler.stop");
  s.close();
  const name = `${i}-${(t.title || "target").replace(/[^a-z0-9]+/gi, "_").slice(0, 40)}`;
  await Deno.writeTextFile(join(flags.out, `${name}.cpuprofile`), JSON.stringify(r.profile));
  summarize(`${t.title} ${t.url}`, r.profile, Number(flags.top));
}
