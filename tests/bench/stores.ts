// Both stores side by side in one run (issue 29 item 6): the shapes of docs/BENCHMARKS.md through
// tests/bench/messaging_load.ts, and the fan-out to a group of 1,000 through
// tests/bench/group_fanout.ts, each shape on SQLite and on PostgreSQL one after the other
// (interleaved, so both see the same machine), with the PostgreSQL server's CPU counted too.
//
//   deno run -A tests/bench/stores.ts [--seconds 15] [--runs 1] [--rounds 5]
//     [--shapes pair,hundred,paced,fanout]
//
// It starts a throwaway PostgreSQL of its own (scripts/test_postgres.sh) unless
// NIXMSG_BENCH_POSTGRES_URL names one (an admin URL on this machine); each run gets a fresh
// database. Figures and their reading are in docs/BENCHMARKS.md ("Both stores").
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "15" },
    runs: { type: "string", default: "1" },
    rounds: { type: "string", default: "5" },
    shapes: { type: "string", default: "pair,hundred,paced,fanout" },
  },
});

/** The shapes of docs/BENCHMARKS.md, as messaging_load.ts flags. */
const SHAPES: Record<string, { label: string; args: string[] }> = {
  pair: {
    label: "one sender, 100 in flight",
    args: ["--connections", "2", "--rate", "0", "--window", "100"],
  },
  hundred: {
    label: "100 connections, closed loop (window 32)",
    args: ["--connections", "100", "--rate", "0", "--window", "32"],
  },
  paced: {
    label: "100 connections, 200 msg/s paced",
    args: ["--connections", "100", "--rate", "200"],
  },
};

/** The fan-out shape, through group_fanout.ts (its small-body rounds; no 256 KiB rounds). */
const FANOUT = {
  label: "fan-out 1,000: one sender, a group of 1,001",
  args: () => ["--recipients", "1000", "--rounds", flags.rounds, "--big-rounds", "0"],
};

/** group_fanout.ts's summary: medians over its rounds, ms from the send; CPU ms per round. */
interface FanoutResult {
  store: string;
  rounds: number;
  resp: number;
  last: number;
  acked: number;
  receipted: number;
  confirmed: number;
  serverCpuMs: number;
  pgCpuMs: number;
  failures: number;
  loadavgStart: string;
}

interface Result {
  store: string;
  msgPerSec: number;
  respP99: number;
  deliverP50: number;
  deliverP99: number;
  receiptP99: number;
  serverUsPerMsg: number;
  pgUsPerMsg: number;
  failures: number;
  loadavgStart: string;
}

const LOAD = fileURLToPath(new URL("./messaging_load.ts", import.meta.url));
const GROUP_FANOUT = fileURLToPath(new URL("./group_fanout.ts", import.meta.url));
const SCRIPT = fileURLToPath(new URL("../../scripts/test_postgres.sh", import.meta.url));
const dec = new TextDecoder();

async function startPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = Deno.env.get("NIXMSG_BENCH_POSTGRES_URL");
  if (given) return { url: given, stop: () => Promise.resolve() };
  const out = await new Deno.Command("bash", { args: [SCRIPT, "start"], stderr: "inherit" })
    .output();
  if (!out.success) throw new Error("scripts/test_postgres.sh start failed");
  const env = dec.decode(out.stdout);
  const url = /NIXMSG_TEST_POSTGRES_URL='([^']*)'/.exec(env)?.[1];
  const dir = /NIXMSG_TEST_POSTGRES_DIR='([^']*)'/.exec(env)?.[1];
  if (!url || !dir) throw new Error("scripts/test_postgres.sh printed no URL");
  const admin = new URL(url);
  admin.pathname = "/postgres";
  return {
    url: admin.toString(),
    stop: async () => {
      await new Deno.Command("bash", { args: [SCRIPT, "stop", dir] }).output();
    },
  };
}

/** Runs a bench `script` on `store`; returns the JSON of its `<marker> {…}` line. */
async function runBench<T>(
  script: string,
  args: string[],
  store: string,
  pgUrl: string,
  marker: string,
): Promise<T> {
  // permissions: not the shipped command: the load generator (it starts the server itself with
  // the shipped set, tests/bench/_load_util.ts) and reads /proc of the server and PostgreSQL.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, "--store", store, ...args],
    env: { NIXMSG_BENCH_POSTGRES_URL: pgUrl },
    stderr: "inherit",
  }).output();
  const text = dec.decode(out.stdout);
  console.log(text.split("\n").filter((l) => !l.startsWith(marker)).join("\n"));
  const line = text.split("\n").find((l) => l.startsWith(`${marker} `));
  if (line === undefined) throw new Error(`${script} on ${store} printed no summary`);
  return JSON.parse(line.slice(marker.length + 1)) as T;
}

const pg = await startPostgres();
const results: { shape: string; r: Result }[] = [];
const fanouts: FanoutResult[] = [];
try {
  for (let i = 0; i < Number(flags.runs); i++) {
    for (const shape of flags.shapes.split(",")) {
      if (shape !== "fanout" && !(shape in SHAPES)) throw new Error(`unknown shape ${shape}`);
      for (const store of ["sqlite", "postgres"]) {
        if (shape === "fanout") {
          fanouts.push(
            await runBench(GROUP_FANOUT, FANOUT.args(), store, pg.url, "group_fanout_json"),
          );
          continue;
        }
        const args = ["--seconds", flags.seconds, ...SHAPES[shape].args];
        results.push({
          shape,
          r: await runBench(LOAD, args, store, pg.url, "messaging_load_json"),
        });
      }
    }
  }
} finally {
  await pg.stop();
}

const f0 = (x: number) => x.toFixed(0);
if (results.length > 0) {
  console.log(
    "\n| shape | store | msg/s | resp p99 ms | deliver p50 / p99 ms | receipt p99 ms | server µs/msg | PostgreSQL µs/msg | total µs/msg | failures | load avg at start |",
  );
  console.log("| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |");
  for (const { shape, r } of results) {
    console.log(
      `| ${SHAPES[shape].label} | ${r.store} | ${f0(r.msgPerSec)} | ${f0(r.respP99)} | ` +
        `${f0(r.deliverP50)} / ${f0(r.deliverP99)} | ${f0(r.receiptP99)} | ${
          f0(r.serverUsPerMsg)
        } | ` +
        `${r.store === "postgres" ? f0(r.pgUsPerMsg) : "–"} | ${
          f0(r.serverUsPerMsg + r.pgUsPerMsg)
        } | ` +
        `${r.failures} | ${r.loadavgStart.split(" ")[0]} |`,
    );
  }
}
if (fanouts.length > 0) {
  console.log(
    `\n${FANOUT.label}, median of ${flags.rounds} rounds, ms from the send (CPU: ms per round)\n` +
      "| store | resp | last msg | all acked | all receipts | all confirmed | server CPU | " +
      "PostgreSQL CPU | failures | load avg at start |",
  );
  console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |");
  for (const r of fanouts) {
    console.log(
      `| ${r.store} | ${f0(r.resp)} | ${f0(r.last)} | ${f0(r.acked)} | ${f0(r.receipted)} | ` +
        `${f0(r.confirmed)} | ${f0(r.serverCpuMs)} | ` +
        `${r.store === "postgres" ? f0(r.pgCpuMs) : "–"} | ${r.failures} | ` +
        `${r.loadavgStart.split(" ")[0]} |`,
    );
  }
}
const clean = results.every(({ r }) => r.failures === 0) && fanouts.every((r) => r.failures === 0);
Deno.exit(clean ? 0 : 1);
