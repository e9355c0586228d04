// The attacks of issue 28 at full scale, against a `nixmsg serve` child with its defaults: one
// address (127.0.0.2) attacks, another (127.0.0.3) measures 29 rounds of /healthz, a WebSocket
// login and a raw MQTT login, each served within 2 s or not; then 10,000 failed CONNECTs with
// 60,000-character ids and the server's RSS around them. Figures go to docs/RELIABILITY.md
// ("Security edges"); tests/edge_flood_test.ts and tests/edge_memory_test.ts are the CI runs.
//
//   deno run -A tests/bench/edge_attacks.ts [--tries 29] [--long-ids 10000]
import { parseArgs } from "node:util";
import { PW } from "../helpers/messaging.ts";
import { startServerProcess } from "../helpers/server_process.ts";
import { bystander, startAttacker } from "../helpers/edge_probe.ts";
import { prepareHome, sampleProc } from "./_load_util.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    tries: { type: "string", default: "29" },
    "long-ids": { type: "string", default: "10000" },
  },
});
const TRIES = Number(values.tries);
const LONG_IDS = Number(values["long-ids"]);
// The long-id attack lifts the per-address connection rate, so every attempt reaches the CONNECT
// check (as tests/edge_flood_test.ts does).
const LIFTED = { limits: { max_conn_rate_per_ip: 100_000 } };
const ATTACKS: [string, string, number, Record<string, unknown>?][] = [
  ["none (same-run peer)", "none", 0],
  ["1,050 partial HTTP requests, reopened when cut", "http", 1050],
  ["1,000 MQTT connections that never log in", "mqtt_idle", 1000],
  ["48 loops of password CONNECTs for unknown ids", "guess", 48],
  ["20 loops of failed CONNECTs with 60,000-character ids", "long_ids_loop", 20, LIFTED],
];

const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
console.log(`load average at start: ${load()}`);
console.log(
  "| attack | /healthz | WebSocket login | raw MQTT login | slowest served (ms) | attack counts |",
);
console.log("|---|---|---|---|---|---|");
for (const [name, kind, n, overrides] of ATTACKS) {
  const home = await prepareHome(overrides ?? {}, ["a"], PW);
  const server = await startServerProcess(home);
  try {
    const attacker = startAttacker(kind, server.port, "127.0.0.2", n);
    const r = await bystander(server.port, "127.0.0.3", "a", PW, TRIES);
    const counts = await attacker.stop();
    const s = r.slowest;
    console.log(
      `| ${name} | ${r.healthz}/${TRIES} | ${r.ws}/${TRIES} | ${r.mqtt}/${TRIES} | ` +
        `${s.healthz} / ${s.ws} / ${s.mqtt} | ${JSON.stringify(counts)} |`,
    );
  } finally {
    await server.stop();
    await home.cleanup();
  }
}

{
  // The per-address connection rate is lifted, so every attempt reaches the CONNECT check.
  const home = await prepareHome({ limits: { max_conn_rate_per_ip: 100_000 } }, ["a"], PW);
  const server = await startServerProcess(home);
  const mib = () => (sampleProc(server.pid).rssBytes / 1024 / 1024).toFixed(1);
  try {
    const cold = mib();
    await startAttacker("long_ids", server.port, "127.0.0.2", 1000).done;
    const warm = mib();
    const t0 = performance.now();
    const counts = await startAttacker("long_ids", server.port, "127.0.0.2", LONG_IDS).done;
    const s = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(
      `\n${LONG_IDS} CONNECTs with 60,000-character ids in ${s} s (${JSON.stringify(counts)}): ` +
        `RSS ${cold} MiB cold, ${warm} MiB after 1,000 warm-up, ${mib()} MiB after`,
    );
  } finally {
    await server.stop();
    await home.cleanup();
  }
}
console.log(`load average at end: ${load()}`);
