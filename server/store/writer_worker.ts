// The writer Worker (DESIGN "The writer"): owns the only write connection and commits each
// message of ops in transactions of at most maxBatch ops (spec 7.2). Started by writer.ts.
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

scope.onmessage = (event) => {
  const msg = event.data;
  switch (msg.type) {
    case "init":
      init(msg).then(
        () => scope.postMessage({ type: "ready" }),
        (err) => scope.postMessage({ type: "init_error", message: messageOf(err) }),
      );
      break;
    case "ops":
      commit(msg.items);
      break;
    case "close":
      // spec 7.8: everything sent before `close` is already committed; stop.
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
  db = openDb(msg.path, { synchronous: msg.synchronous });
  runner = new BatchRunner(db, registry, unguarded);
}

/**
 * Commits the ops of one message at once, in transactions of at most maxBatch, and answers each
 * transaction as soon as it is committed. Batching is the sender's job (writer.ts): it sends the
 * next message only when this one is answered, so the ops that arrive during a commit travel, and
 * commit, together.
 */
function commit(items: WireOp[]): void {
  if (items.length <= maxBatch) {
    post(runner!.run(items));
    return;
  }
  for (let i = 0; i < items.length; i += maxBatch) {
    post(runner!.run(items.slice(i, i + maxBatch)));
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
