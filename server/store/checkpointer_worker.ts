/// <reference lib="deno.worker" />
// The checkpointer Worker (see checkpointer.ts): its own connection copies committed WAL frames
// into the database file with PASSIVE checkpoints, so the writer never blocks on that I/O.
import { openDb } from "./db.ts";

/** Messages the checkpointer Worker accepts. */
export type ToCheckpointer =
  | { type: "start"; path: string; synchronous: "FULL" | "NORMAL"; intervalMs: number }
  | { type: "truncate"; id: number }
  | { type: "stop" };

/** What it reports after each run. */
export type FromCheckpointer =
  | { type: "ran"; log: number; checkpointed: number; busy: number }
  | { type: "error"; message: string }
  | { type: "truncated"; id: number; ok: true; log: number; checkpointed: number; busy: number }
  | { type: "truncated"; id: number; ok: false; message: string }
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

/**
 * spec 7.6: after the hourly cleanup, `wal_checkpoint(TRUNCATE)` empties the WAL file. It waits
 * (busy_timeout) for readers on older snapshots and for the writer, so it runs here, never on
 * the main thread.
 */
function truncate(id: number): void {
  let msg: FromCheckpointer;
  try {
    if (!db) throw new Error("The checkpointer is not started");
    const r = db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get() as Record<string, number>;
    msg = {
      type: "truncated",
      id,
      ok: true,
      busy: Number(r.busy ?? 0),
      log: Number(r.log ?? 0),
      checkpointed: Number(r.checkpointed ?? 0),
    };
  } catch (err) {
    msg = { type: "truncated", id, ok: false, message: (err as Error).message };
  }
  self.postMessage(msg);
}

self.onmessage = (e: MessageEvent<ToCheckpointer>) => {
  const m = e.data;
  if (m.type === "truncate") {
    truncate(m.id);
  } else if (m.type === "start") {
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
