// The writer's share of one message (issue 19 item 2): the real ops of a direct message's life,
// `message.submit`, `delivery.claim`, `delivery.ack` and `receipt.ack`, run through the real
// BatchRunner (BEGIN IMMEDIATE, one SAVEPOINT per op, COMMIT) on a migrated temp database, in
// batches the way a busy writer groups them. No Worker, no main thread: only SQLite and the ops.
//
//   deno run -A tests/bench/message_ops.ts [--messages 20000] [--batch 25] [--sync OFF|FULL]
//     [--quotas on|off] [--backlog 0]
//
// Prints the time per message of each op kind and in total. With `--sync OFF` (the default) no
// fsync is waited for, so the figure is CPU; `FULL` adds the four commits' fsyncs per batch.
// `--quotas on` applies the default max_pending_per_sender/receiver (10,000), which count the
// sender's unfinished messages and the receiver's pending deliveries on every submit.
// `--backlog N` first gives the sender N unfinished messages to a third endpoint that never
// takes them, as when a backend keeps sending to devices that are offline.
import { parseArgs } from "node:util";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { migrate } from "../../server/store/migrations.ts";
import { BatchRunner } from "../../server/store/batch.ts";
import { ops } from "../../server/store/ops/mod.ts";
import { addEndpoint } from "../../server/store/ops/_testing.ts";
import { configure, connected } from "../../server/store/ops/context.ts";
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
  },
});
const N = Number(flags.messages);
const B = Math.max(1, Number(flags.batch));

const dir = await Deno.makeTempDir({ prefix: "nixmsg-ops-" });
try {
  const path = join(dir, "nixmsg.db");
  migrate(path, { backupDir: join(dir, "backup") });
  const db = new DatabaseSync(path);
  db.exec(
    `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${flags.sync === "FULL" ? "FULL" : "OFF"};
    PRAGMA foreign_keys = ON`,
  );
  const quota = flags.quotas === "on" ? 10_000 : 0;
  configure(db, { maxPendingPerSender: quota, maxPendingPerReceiver: quota }, 0);
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  addEndpoint(db, "offline");
  connected(db, { endpointId: "b", connCode: "k1" }, Date.now());
  const runner = new BatchRunner(db, ops);
  const body = new TextEncoder().encode("x".repeat(1024));
  let opId = 0;
  const batch = <T>(items: [string, unknown][], now: number): T[] => {
    const wire: WireOp[] = items.map(([name, args]) => [++opId, name, args, now]);
    const out = runner.run(wire);
    if (!out.ok) throw new Error(out.error);
    return out.results.map((r) => {
      if (!r[1]) throw new Error(`op failed: ${JSON.stringify(r[2])}`);
      return r[2] as T;
    });
  };
  const ms = { submit: 0, claim: 0, ack: 0, receiptAck: 0 };
  const timed = <T>(k: keyof typeof ms, fn: () => T): T => {
    const t = performance.now();
    const r = fn();
    ms[k] += performance.now() - t;
    return r;
  };
  const backlog = Number(flags.backlog);
  for (let i = 0; i < backlog; i += 500) {
    const now = Date.now();
    batch(
      Array.from({ length: Math.min(500, backlog - i) }, (_, k) => ["message.submit", {
        senderId: "a",
        id: `backlog${i + k}`,
        fingerprint: new Uint8Array(32),
        toKind: "endpoint",
        toId: "offline",
        body,
        bodyEnc: "utf8",
        contentType: "text/plain",
        meta: "{}",
        sendAt: now,
        keep: true,
        ttlSeconds: 86400,
        receipt: true,
      }]),
      now,
    );
  }
  let n = 0;
  const started = performance.now();
  while (n < N) {
    const now = Date.now();
    const ids = Array.from({ length: Math.min(B, N - n) }, () => `m${n++}`);
    timed("submit", () =>
      batch(
        ids.map((id) => ["message.submit", {
          senderId: "a",
          id,
          fingerprint: new Uint8Array(32),
          toKind: "endpoint",
          toId: "b",
          body,
          bodyEnc: "utf8",
          contentType: "text/plain",
          meta: "{}",
          sendAt: now,
          keep: false,
          ttlSeconds: 600,
          receipt: true,
        }]),
        now,
      ));
    timed(
      "claim",
      () =>
        batch([["delivery.claim", { endpointId: "b", connCode: "k1", limit: ids.length }]], now),
    );
    const acks = timed("ack", () =>
      batch<AckResult>(
        ids.map((id) => ["delivery.ack", { endpointId: "b", from: "a", id }]),
        now,
      ));
    timed("receiptAck", () =>
      batch(
        acks.map((a) => ["receipt.ack", { senderId: "a", receiptId: a.receipts[0].receiptId }]),
        now,
      ));
  }
  const total = performance.now() - started;
  db.close();
  const us = (x: number) => `${((x * 1000) / N).toFixed(0)} µs`;
  console.log([
    `message_ops: ${N} messages, batches of ${B}, synchronous=${flags.sync}, quotas ${flags.quotas}, ` +
    `sender backlog ${backlog}`,
    `  per message: submit ${us(ms.submit)}, claim ${us(ms.claim)}, ack ${us(ms.ack)}, ` +
    `receipt_ack ${us(ms.receiptAck)}; total ${us(total)}`,
  ].join("\n"));
} finally {
  await Deno.remove(dir, { recursive: true });
}
