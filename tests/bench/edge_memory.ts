// Where a cold server's memory goes under connection churn (issue 28): for each variant, a fresh
// `nixmsg serve` child with its V8 inspector open takes N failed CONNECTs with 60,000-character
// ids (tests/helpers/edge_attacker.ts `long_ids`); RSS, Deno.memoryUsage() and V8's heap spaces
// are read before and after. Variants run interleaved, `--runs` rounds.
//
//   deno run -A tests/bench/edge_memory.ts [--count 10000] [--runs 2] [--variants a,b]
//
// A variant is `name=ENV1=v1;ENV2=v2` (e.g. `semi2=DENO_V8_FLAGS=--max-semi-space-size=2`);
// `shipped` is the shipped command as is; e.g. `mmap32k=MALLOC_MMAP_THRESHOLD_=32768`,
// `arena2=MALLOC_ARENA_MAX=2`. Figures: docs/RELIABILITY.md ("A cold server's RSS under
// connection churn"). `--kind short_ids` runs the short invalid ids instead.
import { parseArgs } from "node:util";
import { PW } from "../helpers/messaging.ts";
import { startAttacker } from "../helpers/edge_probe.ts";
import { prepareHome, sampleProc, startChildServer } from "./_load_util.ts";
import { mainTarget, Session } from "./_inspector.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "10000" },
    runs: { type: "string", default: "2" },
    kind: { type: "string", default: "long_ids" },
    variants: { type: "string", default: "shipped" },
  },
});
const COUNT = Number(values.count);
const MIB = 1024 * 1024;
const variants = values.variants.split(",").map((v) => {
  const [name, ...rest] = v.split("=");
  const env: Record<string, string> = {};
  for (const kv of rest.join("=").split(";").filter((s) => s !== "")) {
    const i = kv.indexOf("=");
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return { name, env };
});

const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
const EXPR = `JSON.stringify({ m: Deno.memoryUsage() })`;

interface Snap {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  anon: number;
  threads: number;
}

async function snap(pid: number, s: Session): Promise<Snap> {
  const r = await s.call<{ result: { value: string } }>("Runtime.evaluate", {
    expression: EXPR,
    returnByValue: true,
  });
  const { m } = JSON.parse(r.result.value);
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return {
    rss: sampleProc(pid).rssBytes,
    heapTotal: m.heapTotal,
    heapUsed: m.heapUsed,
    external: m.external,
    anon: kb("RssAnon"),
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0),
  };
}

const f = (b: number) => (b / MIB).toFixed(1);
console.log(`load average at start: ${load()}; ${COUNT} ${values.kind} per run`);
console.log(
  "| variant | run | RSS cold → after (Δ) | heapTotal cold → after | external | RssAnon Δ | threads | s |",
);
console.log("|---|---|---|---|---|---|---|---|");
let port = 9400;
for (let run = 1; run <= Number(values.runs); run++) {
  for (const v of variants) {
    const home = await prepareHome({ limits: { max_conn_rate_per_ip: 100_000 } }, ["a"], PW);
    Object.assign(home.env, v.env);
    const inspect = `127.0.0.1:${port++}`;
    Deno.env.set("NIXMSG_BENCH_INSPECT", inspect);
    const server = await startChildServer(home);
    const session = new Session((await mainTarget(inspect)).webSocketDebuggerUrl);
    await session.open;
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const a = await snap(server.pid, session);
      const t0 = performance.now();
      await startAttacker(values.kind, server.port, "127.0.0.2", COUNT).done;
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      await new Promise((r) => setTimeout(r, 1000));
      const b = await snap(server.pid, session);
      console.log(
        `| ${v.name} | ${run} | ${f(a.rss)} → ${f(b.rss)} (+${f(b.rss - a.rss)}) | ` +
          `${f(a.heapTotal)} → ${f(b.heapTotal)} (used ${f(a.heapUsed)} → ${f(b.heapUsed)}) | ` +
          `${f(a.external)} → ${f(b.external)} | +${
            f(b.anon - a.anon)
          } | ${a.threads} → ${b.threads} | ${s} |`,
      );
    } finally {
      session.close();
      await server.stop();
      await home.cleanup();
    }
  }
}
console.log(`load average at end: ${load()}`);
