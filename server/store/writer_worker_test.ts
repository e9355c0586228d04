import assert from "node:assert/strict";
import { join } from "node:path";
import { migrate } from "./migrations.ts";
import type { FromWorker, InitMessage, ToWorker } from "./writer_protocol.ts";

const WORKER = new URL("./writer_worker.ts", import.meta.url).href;

/** Starts the raw Worker and collects its messages, for protocol-level checks. */
function startRaw() {
  const worker = new Worker(WORKER, { type: "module" });
  const inbox: FromWorker[] = [];
  const waiters: (() => void)[] = [];
  worker.onmessage = (event: MessageEvent<FromWorker>) => {
    inbox.push(event.data);
    waiters.splice(0).forEach((wake) => wake());
  };
  const next = async (): Promise<FromWorker> => {
    while (inbox.length === 0) await new Promise<void>((wake) => waiters.push(wake));
    return inbox.shift()!;
  };
  const send = (msg: ToWorker) => worker.postMessage(msg);
  return { worker, next, send };
}

function init(path: string, extra: Partial<InitMessage> = {}): InitMessage {
  return { type: "init", path, synchronous: "FULL", maxBatch: 256, ...extra };
}

Deno.test("the writer worker answers init with ready, batches with results, close with closed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-worker-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const { worker, next, send } = startRaw();
  try {
    send(init(path, { maxBatch: 2 }));
    assert.deepEqual(await next(), { type: "ready" });
    send({
      type: "ops",
      items: [
        [1, "settings.set", { key: "a", value: "1" }, 5],
        [2, "settings.delete", { key: "zz" }, 6],
        [3, "settings.delete", { key: "a" }, 7],
      ],
    });
    send({ type: "close" });
    // One message, committed at once in transactions of at most maxBatch, each answered alone.
    const first = await next();
    assert.ok(first.type === "batch" && first.ok);
    assert.deepEqual(first.results, [[1, true, undefined], [2, true, false]]);
    const second = await next();
    assert.ok(second.type === "batch" && second.ok);
    assert.deepEqual(second.results, [[3, true, true]]);
    assert.deepEqual(await next(), { type: "closed" });
  } finally {
    worker.terminate();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the writer worker reports an ops module without ops as an init error", async () => {
  const { worker, next, send } = startRaw();
  try {
    send(init(":memory:", { opsModule: new URL("./reader.ts", import.meta.url).href }));
    const msg = await next();
    assert.equal(msg.type, "init_error");
    assert.match(msg.type === "init_error" ? msg.message : "", /exports no ops/);
  } finally {
    worker.terminate();
  }
});
