// The writer's share of one message (issue 19 item 2): the real ops of a direct message's life,
// `message.submit`, `delivery.claim`, `delivery.ack` and `receipt.ack`, run through the real
// BatchRunner (BEGIN IMMEDIATE, savepoints as the writer uses them, COMMIT) on a migrated temp
// database, in batches the way a busy writer groups them. No Worker, no main thread: only SQLite
// and the ops.
//
//   deno run -A tests/bench/message_ops.ts [--messages 20000] [--batch 25] [--sync OFF|FULL]
//     [--quotas on|off] [--backlog 0] [--refusals 0] [--against /path/to/other/checkout]
//
// Prints the time per message of each op kind and in total. With `--sync OFF` (the default) no
// fsync is waited for, so the figure is CPU; `FULL` adds the four commits' fsyncs per batch.
// `--quotas on` applies the default max_pending_per_sender/receiver (10,000), which count the
// sender's unfinished messages and the receiver's pending deliveries on every submit.
// `--backlog N` first gives the sender N unfinished messages to a third endpoint that never
// takes them, as when a backend keeps sending to devices that are offline.
// `--refusals K` adds K refused submits (to an endpoint that does not exist) to the middle of every
// submit batch, to show what a refusal costs the batch it is in. They are not counted as messages.
// `--against DIR` runs the same ops of another checkout (e.g. a worktree of an older commit) in
// this process too, each on its own database, alternating chunks of 250 messages, so that the
// machine's speed drifts alike for both; it prints both figures and their ratio.
import { parseArgs } from "node:util";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { WireOp } from "../../server/store/writer_protocol.ts";
import type { AckResult } from "../../server/store/ops/deliveries.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    messages: { type: "string", default: "20000" },
    batch: { type: "string", default: "25" },
    sync: { type: "string", default: "OFF" },
    quotas: { type: "string", default: "on" },
    backlog: { type: "string", default: "0" },
    refusals: { type: "string", default: "0" },
    against: { type: "string" },
  },
});
const N = Number(flags.messages);
const B = Math.max(1, Number(flags.batch));
const CHUNK = 250;
const REFUSALS = Math.max(0, Math.floor(Number(flags.refusals)));

const NO_REFUSALS: ReadonlySet<number> = new Set();

type Kind = "submit" | "claim" | "ack" | "receiptAck";

/** One checkout's writer on its own temp database; `run(n)` takes n more messages through. */
interface Bench {
  readonly label: string;
  readonly ms: Record<Kind, number>;
  run(count: number): void;
  close(): Promise<void>;
}

async function bench(root: string, label: string): Promise<Bench> {
  const mod = (path: string) => import(new URL(path, `file://${root.replace(/\/?$/, "/")}`).href);
  const { migrate } = await mod("server/store/migrations.ts");
  const { BatchRunner } = await mod("server/store/batch.ts");
  // Checkouts from before `unguardedOps` run every op inside a savepoint.
  const { ops, unguardedOps } = await mod("server/store/ops/mod.ts");
  const { addEndpoint } = await mod("server/store/ops/_testing.ts");
  const { configure, connected } = await mod("server/store/ops/context.ts");
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-ops-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const db = new DatabaseSync(path);
  // As the server's openDb sets them (secure_delete per spec 7.7), with the chosen fsync mode.
  db.exec(
    `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${flags.sync === "FULL" ? "FULL" : "OFF"};
    PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON`,
  );
  const quota = flags.quotas === "on" ? 10_000 : 0;
  configure(db, { maxPendingPerSender: quota, maxPendingPerReceiver: quota }, 0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  addEndpoint(db, "offline");
  connected(db, { endpointId: "b", connCode: "k1" }, Date.now());
  const runner = new BatchRunner(db, ops, unguardedOps);
  const body = new TextEncoder().encode("x".repeat(1024));
  let opId = 0;
  let n = 0;
  /** Runs one batch; the ops at `refused` must fail with `invalid_target`, all others succeed. */
  const batch = <T>(items: [string, unknown][], now: number, refused = NO_REFUSALS): T[] => {
    const wire: WireOp[] = items.map(([name, args]) => [++opId, name, args, now]);
    const out = runner.run(wire);
    if (!out.ok) throw new Error(out.error);
    const values: T[] = [];
    out.results.forEach((r: [number, boolean, unknown], i: number) => {
      if (refused.has(i)) {
        if (r[1] || (r[2] as { code?: string }).code !== "invalid_target") {
          throw new Error(`op ${i} should have been refused: ${JSON.stringify(r[2])}`);
        }
      } else if (!r[1]) throw new Error(`op failed: ${JSON.stringify(r[2])}`);
      else values.push(r[2] as T);
    });
    return values;
  };
  const submit = (id: string, toId: string, now: number, keep: boolean) =>
    [
      "message.submit",
      {
        senderId: "a",
        id,
        fingerprint: new Uint8Array(32),
        toKind: "endpoint",
        toId,
        body,
        bodyEnc: "utf8",
        contentType: "text/plain",
        meta: "{}",
        sendAt: now,
        keep,
        ttlSeconds: keep ? 86400 : 600,
        receipt: true,
      },
    ] as [string, unknown];
  const backlog = Number(flags.backlog);
  for (let i = 0; i < backlog; i += 500) {
    const now = Date.now();
    const count = Math.min(500, backlog - i);
    batch(
      Array.from({ length: count }, (_, k) => submit(`backlog${i + k}`, "offline", now, true)),
      now,
    );
  }
  const ms: Record<Kind, number> = { submit: 0, claim: 0, ack: 0, receiptAck: 0 };
  const timed = <T>(k: Kind, fn: () => T): T => {
    const t = performance.now();
    const r = fn();
    ms[k] += performance.now() - t;
    return r;
  };
  return {
    label,
    ms,
    run(count: number) {
      for (let done = 0; done < count;) {
        const now = Date.now();
        const ids = Array.from({ length: Math.min(B, count - done) }, () => `m${n++}`);
        done += ids.length;
        const items = ids.map((id) => submit(id, "b", now, false));
        const at = Math.floor(items.length / 2);
        const refused = new Set<number>();
        for (let k = 0; k < REFUSALS; k++) {
          refused.add(at + k);
          items.splice(at + k, 0, submit(`refused${n}-${k}`, "nobody", now, false));
        }
        timed("submit", () => batch(items, now, refused));
        timed(
          "claim",
          () =>
            batch(
              [["delivery.claim", { endpointId: "b", connCode: "k1", limit: ids.length }]],
              now,
            ),
        );
        const acks = timed("ack", () =>
          batch<AckResult>(
            ids.map((id) => ["delivery.ack", { endpointId: "b", from: "a", id }]),
            now,
          ));
        timed("receiptAck", () =>
          batch(
            acks.map((
              a,
            ) => ["receipt.ack", { senderId: "a", receiptId: a.receipts[0].receiptId }]),
            now,
          ));
      }
    },
    async close() {
      db.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const benches = [await bench(new URL("../../", import.meta.url).pathname, "this checkout")];
if (flags.against) benches.push(await bench(flags.against, flags.against));
try {
  // Warm up (JIT, page cache), then start the clocks from zero.
  for (const b of benches) b.run(Math.min(2000, N));
  for (const b of benches) for (const k of Object.keys(b.ms) as Kind[]) b.ms[k] = 0;
  for (let done = 0; done < N; done += CHUNK) {
    for (const b of benches) b.run(Math.min(CHUNK, N - done));
  }
  const us = (x: number) => `${((x * 1000) / N).toFixed(0)} µs`;
  const total = (b: Bench) => b.ms.submit + b.ms.claim + b.ms.ack + b.ms.receiptAck;
  console.log(
    `message_ops: ${N} messages, batches of ${B}, synchronous=${flags.sync}, ` +
      `quotas ${flags.quotas}, sender backlog ${flags.backlog}, refused submits per batch ${REFUSALS}`,
  );
  for (const b of benches) {
    console.log(
      `  ${b.label}: per message submit ${us(b.ms.submit)}, claim ${us(b.ms.claim)}, ` +
        `ack ${us(b.ms.ack)}, receipt_ack ${us(b.ms.receiptAck)}; total ${us(total(b))}`,
    );
  }
  if (benches.length === 2) {
    console.log(`  ratio this / other: ${(total(benches[0]) / total(benches[1])).toFixed(3)}`);
  }
} finally {
  for (const b of benches) await b.close();
}
