// Writer benchmark (spec 7.2, DESIGN verified item 7): ops/s through the real Worker writer with
// synchronous=FULL on a temp file, at batch limits 1, 16 and 256; then the latency of one op on an
// idle writer (issue 33): group commit (maxWaitMs 0) beside a fixed 2 ms wait (maxWaitMs 2, what
// every batch paid before).
//
//   deno run -A tests/bench/writer.ts [seconds-per-run] [idle ops]
//
// This file is also the ops module loaded into the Worker, so the bench op uses the real schema
// and the real op path (Worker, SAVEPOINT per op, COMMIT per batch).
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../../server/store/db.ts";
import { migrate } from "../../server/store/migrations.ts";
import { Writer } from "../../server/store/writer.ts";

const SQL_INSERT_MESSAGE = `INSERT INTO messages (id, sender_id, dest_kind, dest_id, content_type,
  body_enc, send_at, keep, ttl_seconds, receipt, state, created_at)
  VALUES (?, ?, 'endpoint', ?, 'text/plain', 'utf8', ?, 1, 86400, 1, 'dispatched', ?)`;
const SQL_INSERT_BODY = "INSERT INTO message_bodies (seq, body) VALUES (?, ?)";
const SQL_INSERT_DELIVERY = `INSERT INTO deliveries (seq, endpoint_id, send_at, keep, state,
  expire_at, updated_at) VALUES (?, ?, ?, 1, 'pending', ?, ?)`;

const SQL_INSERT_RECEIPT = `INSERT INTO receipts (sender_id, msg_id, endpoint_id, state,
  created_at) VALUES (?, ?, ?, 'accepted', ?)`;

interface SubmitArgs {
  id: string;
  from: string;
  to: string;
  body: Uint8Array;
}

/** A realistic submit: a messages row, its 1 KiB body and one delivery. */
function benchSubmit(db: DatabaseSync, a: SubmitArgs, now: number): { seq: number } {
  const seq = Number(
    prepareCached(db, SQL_INSERT_MESSAGE).run(a.id, a.from, a.to, now, now).lastInsertRowid,
  );
  prepareCached(db, SQL_INSERT_BODY).run(seq, a.body);
  prepareCached(db, SQL_INSERT_DELIVERY).run(seq, a.to, now, now + 86_400_000, now);
  return { seq };
}

/** A light op for comparison: one small receipts row. */
function benchReceipt(db: DatabaseSync, a: SubmitArgs, now: number): { id: number } {
  const r = prepareCached(db, SQL_INSERT_RECEIPT).run(a.from, a.id, a.to, now);
  return { id: Number(r.lastInsertRowid) };
}

export const ops = { "bench.submit": benchSubmit, "bench.receipt": benchReceipt };
type BenchOp = keyof typeof ops;

interface RunResult {
  op: BenchOp;
  batch: number;
  ops: number;
  seconds: number;
  commits: number;
  commitMs: number;
}

async function runOnce(op: BenchOp, batch: number, seconds: number): Promise<RunResult> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-bench-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start<typeof ops>({
    path,
    synchronous: "FULL",
    maxBatch: batch,
    opsModule: import.meta.url,
  });
  let commitMs = 0;
  writer.onCommit((info) => commitMs += info.ms);
  const body = crypto.getRandomValues(new Uint8Array(1024));
  // Enough ops in flight to keep several full batches queued at every limit.
  const inFlight = Math.max(64, batch * 8);
  let next = 0;
  let done = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;

  await new Promise<void>((resolve, reject) => {
    let open = 0;
    const issue = () => {
      open++;
      const n = next++;
      writer.run(op, { id: `m${n}`, from: "alice", to: `e${n % 100}`, body }).then(
        () => {
          done++;
          open--;
          if (performance.now() < deadline) issue();
          else if (open === 0) resolve();
        },
        reject,
      );
    };
    for (let i = 0; i < inFlight; i++) issue();
  });
  const elapsed = (performance.now() - started) / 1000;
  const commits = writer.commits;
  await writer.close();
  await Deno.remove(dir, { recursive: true });
  return { op, batch, ops: done, seconds: elapsed, commits, commitMs };
}

/** One op at a time, each after a 3 ms pause (an idle writer): the latency of each, in ms. */
async function idleLatency(maxWaitMs: number, n: number): Promise<number[]> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-bench-" });
  const path = join(dir, "nixmsg.db");
  migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start<typeof ops>({
    path,
    synchronous: "FULL",
    maxWaitMs,
    opsModule: import.meta.url,
  });
  const body = crypto.getRandomValues(new Uint8Array(1024));
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await writer.run("bench.submit", { id: `m${i}`, from: "alice", to: `e${i % 100}`, body });
    ms.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 3));
  }
  await writer.close();
  await Deno.remove(dir, { recursive: true });
  return ms;
}

if (import.meta.main) {
  const seconds = Number(Deno.args[0] ?? 3);
  const idleOps = Number(Deno.args[1] ?? 500);
  console.log(`Writer benchmark: synchronous=FULL, ${seconds} s per run, ${Deno.build.target}`);
  console.log(
    "| op | max batch | ops | seconds | ops/s | commits | ops/commit | ms/batch | vs 1 |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const op of ["bench.submit", "bench.receipt"] as const) {
    let base = 0;
    for (const batch of [1, 16, 256]) {
      const r = await runOnce(op, batch, seconds);
      const rate = r.ops / r.seconds;
      if (batch === 1) base = rate;
      console.log(
        `| ${op} | ${r.batch} | ${r.ops} | ${r.seconds.toFixed(2)} | ${Math.round(rate)} | ` +
          `${r.commits} | ${(r.ops / r.commits).toFixed(1)} | ` +
          `${(r.commitMs / r.commits).toFixed(3)} | ${(rate / base).toFixed(1)}x |`,
      );
    }
  }
  console.log(`\nOne bench.submit at a time on an idle writer, ${idleOps} ops, load ${loadavg()}`);
  console.log("| maxWaitMs | p50 ms | p90 ms | p99 ms |");
  console.log("|---:|---:|---:|---:|");
  // Interleaved, so that a change in the machine's load hits both.
  const runs: Record<number, number[]> = { 0: [], 2: [] };
  for (let round = 0; round < 2; round++) {
    for (const wait of [0, 2]) runs[wait].push(...await idleLatency(wait, idleOps / 2));
  }
  for (const wait of [0, 2]) {
    const ms = runs[wait].sort((a, b) => a - b);
    const q = [0.5, 0.9, 0.99].map((p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]);
    console.log(`| ${wait} | ${q.map((x) => x.toFixed(2)).join(" | ")} |`);
  }
}

function loadavg(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}
