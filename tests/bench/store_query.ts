// What the async read interface costs per read (issue 29): the same read through
// `store.query("endpoint.self_row")` (a settled promise, awaited) and as the direct synchronous
// call on the read connection it wraps, N times each, alternating rounds.
//
//   deno run -A tests/bench/store_query.ts [reads per round, default 200000]
import { join } from "node:path";
import { openSqliteStore } from "../../server/store/sqlite_store.ts";
import { selfRow } from "../../server/store/queries/endpoints.ts";

const n = Number(Deno.args[0] ?? 200_000);
const dir = await Deno.makeTempDir({ prefix: "nixmsg-bench-" });
const store = await openSqliteStore({
  path: join(dir, "n.db"),
  backupDir: join(dir, "backup"),
  synchronous: "FULL",
  maxBatch: 256,
  maxWaitMs: 2,
});
try {
  await store.run("endpoint.create", {
    id: "dev1",
    name: "dev1",
    remark: "",
    source: "admin",
    loginHash: "x",
    talkHash: null,
    defaultDelayMs: 0,
  });
  const direct: number[] = [];
  const viaStore: number[] = [];
  for (let round = 0; round < 5; round++) {
    let t = performance.now();
    for (let i = 0; i < n; i++) if (selfRow(store.reader, "dev1") === null) throw new Error("gone");
    direct.push(((performance.now() - t) * 1e6) / n);
    t = performance.now();
    for (let i = 0; i < n; i++) {
      if ((await store.query("endpoint.self_row", { id: "dev1" })) === null) {
        throw new Error("gone");
      }
    }
    viaStore.push(((performance.now() - t) * 1e6) / n);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
  console.log(
    `reads per round: ${n}, load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`,
  );
  console.log(
    `direct selfRow():                ${fmt(direct)} ns/read (median ${median(direct).toFixed(0)})`,
  );
  console.log(
    `await store.query(self_row):     ${fmt(viaStore)} ns/read (median ${
      median(viaStore).toFixed(0)
    })`,
  );
  console.log(
    `difference (medians):            ${(median(viaStore) - median(direct)).toFixed(0)} ns/read`,
  );
} finally {
  await store.close();
  await Deno.remove(dir, { recursive: true });
}
