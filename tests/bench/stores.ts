// Both stores side by side in one run (issue 29 item 6): the shapes of docs/BENCHMARKS.md through
// tests/bench/messaging_load.ts, each shape on SQLite and on PostgreSQL one after the other
// (interleaved, so both see the same machine), with the PostgreSQL server's CPU counted too.
//
//   deno run -A tests/bench/stores.ts [--seconds 15] [--runs 1] [--shapes pair,hundred,paced]
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
    shapes: { type: "string", default: "pair,hundred,paced" },
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

async function run(shape: string, store: string, pgUrl: string): Promise<Result> {
  // permissions: not the shipped command: the load generator (it starts the server itself with
  // the shipped set, tests/bench/_load_util.ts) and reads /proc of the server and PostgreSQL.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      LOAD,
      "--seconds",
      flags.seconds,
      "--store",
      store,
      ...SHAPES[shape].args,
    ],
    env: { NIXMSG_BENCH_POSTGRES_URL: pgUrl },
    stderr: "inherit",
  }).output();
  const text = dec.decode(out.stdout);
  console.log(text.split("\n").filter((l) => !l.startsWith("messaging_load_json")).join("\n"));
  const line = text.split("\n").find((l) => l.startsWith("messaging_load_json "));
  if (line === undefined) throw new Error(`${shape}/${store}: messaging_load printed no summary`);
  return JSON.parse(line.slice("messaging_load_json ".length)) as Result;
}

const pg = await startPostgres();
const results: { shape: string; r: Result }[] = [];
try {
  for (let i = 0; i < Number(flags.runs); i++) {
    for (const shape of flags.shapes.split(",")) {
      if (!(shape in SHAPES)) throw new Error(`unknown shape ${shape}`);
      for (const store of ["sqlite", "postgres"]) {
        results.push({ shape, r: await run(shape, store, pg.url) });
      }
    }
  }
} finally {
  await pg.stop();
}

const f0 = (x: number) => x.toFixed(0);
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
Deno.exit(results.every(({ r }) => r.failures === 0) ? 0 : 1);
