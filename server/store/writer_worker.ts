// The writer Worker (DESIGN "The writer"): owns the only write connection and merges queued ops
// into one transaction of at most maxBatch ops or maxWaitMs (spec 7.2). Started by writer.ts.
import type { DatabaseSync } from "node:sqlite";
import { BatchRunner } from "./batch.ts";
import { openDb } from "./db.ts";
import type { OpRegistry } from "./op.ts";
import { ops as builtinOps, unguardedOps } from "./ops/mod.ts";
import type {
  BatchCommittedMessage,
  FromWorker,
  InitMessage,
  ToWorker,
  WireOp,
  WireResult,
} from "./writer_protocol.ts";

/** The worker global, typed narrowly so this file checks under the main-thread lib. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
  close(): void;
}
const scope = globalThis as unknown as WorkerScope;

let db: DatabaseSync | undefined;
let runner: BatchRunner | undefined;
let maxBatch = 256;
let maxWaitMs = 2;
let closing = false;

// The queue: items[head..] are waiting; arrived[i] is when items[i] reached the Worker.
let items: WireOp[] = [];
let arrived: number[] = [];
let head = 0;
let timer: ReturnType<typeof setTimeout> | undefined;

scope.onmessage = (event) => {
  const msg = event.data;
  switch (msg.type) {
    case "init":
      init(msg).then(
        () => scope.postMessage({ type: "ready" }),
        (err) => scope.postMessage({ type: "init_error", message: messageOf(err) }),
      );
      break;
    case "ops": {
      const t = performance.now();
      for (const item of msg.items) {
        items.push(item);
        arrived.push(t);
      }
      pump();
      break;
    }
    case "close":
      // spec 7.8: commit what is queued, without waiting to fill a batch, then stop.
      closing = true;
      pump();
      db?.close();
      scope.postMessage({ type: "closed" });
      scope.close();
      break;
  }
};

async function init(msg: InitMessage): Promise<void> {
  let registry: OpRegistry = builtinOps;
  let unguarded: ReadonlySet<string> = unguardedOps;
  if (msg.opsModule !== undefined) {
    const mod = await import(msg.opsModule) as {
      ops?: OpRegistry;
      unguardedOps?: ReadonlySet<string>;
    };
    if (mod.ops === undefined) throw new Error(`Module ${msg.opsModule} exports no ops`);
    registry = mod.ops;
    // A test's registry may replace any op: savepoints for all unless it says otherwise.
    unguarded = mod.unguardedOps ?? new Set();
  }
  maxBatch = msg.maxBatch;
  maxWaitMs = msg.maxWaitMs;
  db = openDb(msg.path, { synchronous: msg.synchronous });
  runner = new BatchRunner(db, registry, unguarded);
}

/** Runs every batch that is due: full, older than maxWaitMs, or closing. */
function pump(): void {
  if (timer !== undefined) {
    clearTimeout(timer);
    timer = undefined;
  }
  while (queued() > 0) {
    const due = queued() >= maxBatch || closing ||
      performance.now() - arrived[head] >= maxWaitMs;
    if (!due) break;
    const n = Math.min(maxBatch, queued());
    const batch = items.slice(head, head + n);
    head += n;
    compact();
    post(runner!.run(batch));
  }
  if (queued() > 0) {
    timer = setTimeout(pump, Math.max(0, arrived[head] + maxWaitMs - performance.now()));
  }
}

function queued(): number {
  return items.length - head;
}

function compact(): void {
  if (head === items.length) {
    items = [];
    arrived = [];
    head = 0;
  } else if (head > 4096) {
    items = items.slice(head);
    arrived = arrived.slice(head);
    head = 0;
  }
}

function post(msg: FromWorker): void {
  try {
    scope.postMessage(msg);
  } catch (err) {
    // An op returned something that cannot be cloned. The batch is committed; answer the
    // others normally and this op with an error rather than leave every caller hanging.
    if (msg.type !== "batch" || !msg.ok) throw err;
    scope.postMessage(cloneableBatch(msg));
  }
}

function cloneableBatch(msg: BatchCommittedMessage): BatchCommittedMessage {
  const results = msg.results.map((result): WireResult => {
    if (!result[1]) return result;
    try {
      structuredClone(result[2]);
      return result;
    } catch (err) {
      return [result[0], false, { message: `Result is not cloneable: ${messageOf(err)}` }];
    }
  });
  return { ...msg, results };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
