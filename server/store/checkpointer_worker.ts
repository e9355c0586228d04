/// <reference lib="deno.worker" />
// The checkpointer Worker (see checkpointer.ts): its own connection copies committed WAL frames
// into the database file with PASSIVE checkpoints, so the writer never blocks on that I/O.
import { openDb } from "./db.ts";

/** Messages the checkpointer Worker accepts. */
export type ToCheckpointer =
  | { type: "start"; path: string; synchronous: "FULL" | "NORMAL"; intervalMs: number }
  | { type: "stop" };

/** What it reports after each run. */
export type FromCheckpointer =
  | { type: "ran"; log: number; checkpointed: number; busy: number }
  | { type: "error"; message: string }
  | { type: "stopped" };

let timer: ReturnType<typeof setInterval> | undefined;
let db: ReturnType<typeof openDb> | undefined;

function run(): void {
  if (!db) return;
  try {
    const r = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as Record<string, number>;
    const msg: FromCheckpointer = {
      type: "ran",
      busy: Number(r.busy ?? 0),
      log: Number(r.log ?? 0),
      checkpointed: Number(r.checkpointed ?? 0),
    };
    self.postMessage(msg);
  } catch (err) {
    self.postMessage({ type: "error", message: (err as Error).message } as FromCheckpointer);
  }
}

self.onmessage = (e: MessageEvent<ToCheckpointer>) => {
  const m = e.data;
  if (m.type === "start") {
    db = openDb(m.path, { synchronous: m.synchronous });
    timer = setInterval(run, m.intervalMs);
    run();
  } else {
    clearInterval(timer);
    db?.close();
    db = undefined;
    self.postMessage({ type: "stopped" } as FromCheckpointer);
  }
};
