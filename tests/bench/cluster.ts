// Messages per second and latency with 1, 2 and 3 cluster nodes (issue 30): each run starts N
// `nixmsg serve` processes on one fresh PostgreSQL database and one nats-server
// (tests/helpers/cluster.ts), connects P senders and P receivers over WebSocket, sender i on node
// i mod N and its receiver on the next node (with one node, the same), and sends for a fixed time
// with W sends in flight per sender. Receivers ack every message. Latency is from the send request
// to the `msg` frame at the receiver (one process, one clock). Everything, the load generator
// included, shares this machine.
//
//   eval "$(bash scripts/test_postgres.sh start)"
//   deno run -A tests/bench/cluster.ts [--nodes 1,2,3] [--pairs 20] [--seconds 10] [--window 4]
//
// Figures and their reading: docs/BENCHMARKS.md ("Cluster nodes").
import { parseArgs } from "node:util";
import { online, type TestClient } from "../helpers/client.ts";
import { PW, sendFrame } from "../helpers/messaging.ts";
import { startCluster } from "../helpers/cluster.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    nodes: { type: "string", default: "1,2,3" },
    pairs: { type: "string", default: "20" },
    seconds: { type: "string", default: "10" },
    window: { type: "string", default: "4" },
  },
});
const PAIRS = Number(flags.pairs);
const SECONDS = Number(flags.seconds);
const WINDOW = Number(flags.window);
/** After the sending stops, how long delivery of what was answered may take at most. */
const DRAIN_MS = 15_000;

interface Row {
  nodes: number;
  answered: number;
  delivered: number;
  lost: number;
  msgPerSec: number;
  p50: number;
  p99: number;
  crossNode: number;
  timedOut: number;
}

function rank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function run(n: number): Promise<Row> {
  const senders = Array.from({ length: PAIRS }, (_, i) => `s${i}`);
  const receivers = Array.from({ length: PAIRS }, (_, i) => `r${i}`);
  const cl = await startCluster(n, [...senders, ...receivers]);
  const clients: TestClient[] = [];
  try {
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    const seen = new Set<string>();
    const answered = new Set<string>();
    /** Messages both answered ok and received. */
    let both = 0;
    /** Sends with no answer within the client's wait (8 s). */
    let timedOut = 0;
    let notify = () => {};
    for (let i = 0; i < PAIRS; i++) {
      const r = (await online(cl.url((i + 1) % n), receivers[i], PW)).client;
      clients.push(r);
      let read = 0;
      r.watch(() => {
        for (; read < r.frames.length; read++) {
          const f = r.frames[read];
          if (f.type !== "msg") continue;
          const id = String(f.id);
          const at = sentAt.get(id);
          if (!seen.has(id)) {
            if (at !== undefined) latencies.push(performance.now() - at);
            if (answered.has(id)) both++;
          }
          seen.add(id);
          r.request({ type: "ack", from: f.from, id: f.id }).catch(() => {});
          notify();
        }
      });
    }
    const sendersConn: TestClient[] = [];
    for (let i = 0; i < PAIRS; i++) {
      const s = (await online(cl.url(i % n), senders[i], PW)).client;
      clients.push(s);
      sendersConn.push(s);
    }
    const end = performance.now() + SECONDS * 1000;
    await Promise.all(sendersConn.flatMap((s, i) =>
      Array.from({ length: WINDOW }, async (_, w) => {
        for (let k = 0; performance.now() < end; k++) {
          const id = `m${i}-${w}-${k}`;
          sentAt.set(id, performance.now());
          const r = await s.request(sendFrame(id, receivers[i], "x", { delay_ms: 0 }))
            .catch(() => null);
          if (r === null) timedOut++;
          if (r?.ok !== true) continue;
          answered.add(id);
          if (seen.has(id)) both++;
        }
      })
    ));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, DRAIN_MS);
      notify = () => {
        if (both >= answered.size) {
          clearTimeout(timer);
          resolve();
        }
      };
      notify();
    });
    const sorted = latencies.sort((a, b) => a - b);
    const delivered = both;
    return {
      nodes: n,
      answered: answered.size,
      delivered,
      lost: answered.size - delivered,
      msgPerSec: Math.round(delivered / SECONDS),
      p50: Math.round(rank(sorted, 0.5)),
      p99: Math.round(rank(sorted, 0.99)),
      crossNode: n === 1 ? 0 : PAIRS,
      timedOut,
    };
  } finally {
    for (const c of clients) await c.close();
    await cl.close();
  }
}

const rows: Row[] = [];
for (const n of flags.nodes.split(",").map(Number)) {
  const row = await run(n);
  rows.push(row);
  console.error(JSON.stringify(row));
}
console.log(
  `| nodes | pairs (cross-node) | answered | delivered | lost | msg/s | p50 ms | p99 ms | no answer |`,
);
console.log(
  `| ----- | ------------------ | -------- | --------- | ---- | ----- | ------ | ------ | --------- |`,
);
for (const r of rows) {
  console.log(
    `| ${r.nodes} | ${PAIRS} (${r.crossNode}) | ${r.answered} | ${r.delivered} | ${r.lost} | ` +
      `${r.msgPerSec} | ${r.p50} | ${r.p99} | ${r.timedOut} |`,
  );
}
