// Where an idle WebSocket connection's memory goes (issue 33): a server child (the real server,
// in-process in a small script, with a cheap argon2 so that logins are fast) with its V8 inspector
// open; N1 then N2 clients log in (MQTT 5 over ws://, subscribe, `hello`) and stay idle. At 0, N1
// and N2 connections, after a full GC: RSS, Deno.memoryUsage(), and (with --snapshot) a V8 heap
// snapshot summed by constructor; the report is the difference per connection between N1 and N2.
//
//   prlimit --nofile=20000:20000 -- deno run -A tests/bench/idle_heap.ts [--n1 2000] [--n2 4000]
//     [--snapshot] [--top 40]
//
// It finds where memory goes; idle_connections.ts (production argon2, a `nixmsg serve` child) is
// the figure of record.
import { parseArgs } from "node:util";
import type { MqttClient } from "mqtt";
import { DENO_PERMISSIONS } from "../../scripts/deno_permissions.ts";
import { helloLogin } from "./_mqtt_login.ts";
import { mainTarget, Session } from "./_inspector.ts";
import { manyIdleClients, sampleProc } from "./_load_util.ts";

const PASSWORD = "idle-heap-1";

/** The parts of a V8 heap snapshot (`HeapProfiler.takeHeapSnapshot`) read here. */
interface HeapSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[]];
      edge_fields: string[];
      edge_types: [string[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

async function serve(n: number): Promise<void> {
  const { startTestServer } = await import("../helpers/test_server.ts");
  const ts = await startTestServer({
    ...manyIdleClients(n),
  });
  for (let i = 0; i < n; i++) await ts.createEndpoint(`h${i}`, PASSWORD);
  console.log(JSON.stringify({ port: ts.port }));
  await new Promise(() => {});
}

interface Row {
  count: number;
  size: number;
}

/**
 * A heap snapshot of the target, summed by node type and constructor (or function) name; with
 * `retainersOf`, also what holds the nodes of those names (`holder.edge`), printed at once.
 */
async function heapSummary(s: Session, retainersOf: string[] = []): Promise<Map<string, Row>> {
  const chunks: string[] = [];
  s.onEvent = (method, params) => {
    if (method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(params.chunk as string);
  };
  await s.call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  s.onEvent = null;
  const snap = JSON.parse(chunks.join("")) as HeapSnapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const out = new Map<string, Row>();
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + iType]];
    const name = snap.strings[snap.nodes[i + iName]];
    const key = type === "object" || type === "native"
      ? `${type === "native" ? "native " : ""}${name.replace(/ @\d+$/, "")}`
      : type === "closure" || type === "code" || type === "array" || type === "hidden"
      ? `${type} ${name.slice(0, 60)}`
      : type;
    const r = out.get(key) ?? { count: 0, size: 0 };
    r.count++;
    r.size += snap.nodes[i + iSize];
    out.set(key, r);
  }
  if (retainersOf.length > 0) printRetainers(snap, retainersOf);
  return out;
}

function printRetainers(
  snap: HeapSnapshot,
  names: string[],
): void {
  const nf = snap.snapshot.meta.node_fields;
  const ef = snap.snapshot.meta.edge_fields;
  const etypes = snap.snapshot.meta.edge_types[0];
  const ntypes = snap.snapshot.meta.node_types[0];
  const iName = nf.indexOf("name");
  const iType = nf.indexOf("type");
  const iEdges = nf.indexOf("edge_count");
  const label = (n: number) => {
    const t = ntypes[snap.nodes[n + iType]];
    const name = snap.strings[snap.nodes[n + iName]].replace(/ @\d+$/, "").slice(0, 50);
    return t === "object" ? name : `${t}:${name}`;
  };
  const wanted = new Set(names);
  const counts = new Map<string, number>();
  let e = 0;
  for (let n = 0; n < snap.nodes.length; n += nf.length) {
    const count = snap.nodes[n + iEdges];
    for (let k = 0; k < count; k++, e += ef.length) {
      const et = etypes[snap.edges[e]];
      if (et === "weak") continue;
      const to = snap.edges[e + 2];
      const target = label(to);
      if (!wanted.has(target)) continue;
      const en = et === "element" || et === "hidden"
        ? `[${et}]`
        : String(snap.strings[snap.edges[e + 1]]).slice(0, 40);
      const key = `${target} <- ${label(n)}.${en}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 80)) {
    console.log(`  ${c}\t${k}`);
  }
}

interface Point {
  conns: number;
  /** RSS and heapTotal before the forced GC (as the idle bench reads them). */
  rssNoGc: number;
  heapTotalNoGc: number;
  /** How long the first forced full GC took, as the inspector call saw it. */
  gcMs: number;
  rss: number;
  anon: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  heap?: Map<string, Row>;
}

async function measure(
  pid: number,
  s: Session,
  conns: number,
  snapshot: boolean,
  retainersOf: string[] = [],
): Promise<Point> {
  const usage = async () => {
    const r = await s.call<{ result: { value: string } }>("Runtime.evaluate", {
      expression: "JSON.stringify(Deno.memoryUsage())",
      returnByValue: true,
    });
    return JSON.parse(r.result.value);
  };
  const before = await usage();
  const rssNoGc = sampleProc(pid).rssBytes;
  await s.call("HeapProfiler.enable");
  const t0 = performance.now();
  await s.call("HeapProfiler.collectGarbage");
  const gcMs = performance.now() - t0;
  await s.call("HeapProfiler.collectGarbage");
  await new Promise((r) => setTimeout(r, 1000));
  const m = await usage();
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  const p: Point = {
    conns,
    rssNoGc,
    heapTotalNoGc: before.heapTotal,
    gcMs,
    rss: sampleProc(pid).rssBytes,
    anon: kb("RssAnon"),
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
  };
  if (snapshot) p.heap = await heapSummary(s, retainersOf);
  return p;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      n1: { type: "string", default: "2000" },
      n2: { type: "string", default: "4000" },
      window: { type: "string", default: "200" },
      snapshot: { type: "boolean", default: false },
      top: { type: "string", default: "40" },
      inspect: { type: "string", default: "127.0.0.1:9239" },
      retainers: { type: "string", default: "" },
    },
  });
  const n1 = Number(values.n1);
  const n2 = Number(values.n2);
  const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  const fds = Math.ceil(n2 * 1.25) + 1024;
  const child = new Deno.Command("prlimit", {
    args: [
      `--nofile=${fds}:${fds}`,
      "--",
      Deno.execPath(),
      "run",
      "--quiet",
      ...DENO_PERMISSIONS,
      `--inspect=${values.inspect}`,
      new URL(import.meta.url).pathname,
      "--serve",
      String(n2),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (!buf.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the server exited");
    buf += value;
  }
  const port = JSON.parse(buf.slice(0, buf.indexOf("\n"))).port as number;
  const s = new Session((await mainTarget(values.inspect)).webSocketDebuggerUrl);
  await s.open;
  const url = `ws://127.0.0.1:${port}/mqtt`;
  const open: MqttClient[] = [];
  const connect = async (from: number, to: number) => {
    let next = from;
    const lane = async () => {
      while (next < to) {
        const i = next++;
        const r = await helloLogin(url, `h${i}`, PASSWORD, { timeoutMs: 60_000 });
        open.push(r.c);
      }
    };
    await Promise.all(Array.from({ length: Number(values.window) }, lane));
  };
  console.log(`load average at start: ${load()}`);
  const points: Point[] = [];
  try {
    // Warm up (code compiled, pools grown) before the first point.
    await connect(0, 200);
    await Promise.all(open.splice(0).map((c) => c.endAsync(true)));
    points.push(await measure(child.pid, s, 0, values.snapshot));
    await connect(0, n1);
    points.push(await measure(child.pid, s, n1, values.snapshot));
    await connect(n1, n2);
    const retainersOf = values.retainers.split(",").filter((x) => x !== "");
    points.push(await measure(child.pid, s, n2, values.snapshot, retainersOf));
  } finally {
    s.close();
    child.kill("SIGKILL");
    await child.status;
  }
  const KiB = 1024;
  console.log(`load average at end: ${load()}`);
  console.log(
    "| connections | RSS / heapTotal before GC MiB | RSS MiB | RssAnon MiB | heapUsed MiB | heapTotal MiB | external MiB | full GC ms |",
  );
  console.log("|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const p of points) {
    const f = (b: number) => (b / KiB / KiB).toFixed(1);
    console.log(
      `| ${p.conns} | ${f(p.rssNoGc)} / ${f(p.heapTotalNoGc)} | ${f(p.rss)} | ${f(p.anon)} | ${
        f(p.heapUsed)
      } | ${f(p.heapTotal)} | ${f(p.external)} | ${p.gcMs.toFixed(0)} |`,
    );
  }
  const [, a, b] = points;
  const per = (x: number, y: number) => ((y - x) / (b.conns - a.conns) / KiB).toFixed(2);
  console.log(
    `\nper connection ${a.conns} → ${b.conns}: before GC: RSS ${
      per(a.rssNoGc, b.rssNoGc)
    } KiB, heapTotal ${per(a.heapTotalNoGc, b.heapTotalNoGc)} KiB; after GC: RSS ${
      per(a.rss, b.rss)
    } KiB, RssAnon ${per(a.anon, b.anon)} KiB, heapUsed ${
      per(a.heapUsed, b.heapUsed)
    } KiB, heapTotal ${per(a.heapTotal, b.heapTotal)} KiB, external ${
      per(a.external, b.external)
    } KiB`,
  );
  if (a.heap && b.heap) {
    const rows = [...new Set([...a.heap.keys(), ...b.heap.keys()])].map((k) => {
      const x = a.heap!.get(k) ?? { count: 0, size: 0 };
      const y = b.heap!.get(k) ?? { count: 0, size: 0 };
      return {
        k,
        dc: (y.count - x.count) / (b.conns - a.conns),
        ds: (y.size - x.size) / (b.conns - a.conns),
      };
    }).sort((p, q) => q.ds - p.ds);
    const total = rows.reduce((t, r) => t + r.ds, 0);
    console.log(`\nV8 heap per connection (snapshot): ${total.toFixed(0)} B`);
    console.log("| what | objects / conn | bytes / conn |");
    console.log("|---|--:|--:|");
    for (const r of rows.slice(0, Number(values.top))) {
      console.log(`| ${r.k.replaceAll("|", "/")} | ${r.dc.toFixed(2)} | ${r.ds.toFixed(0)} |`);
    }
  }
  Deno.exit(0);
}

if (Deno.args[0] === "--serve") await serve(Number(Deno.args[1]));
else await main();
