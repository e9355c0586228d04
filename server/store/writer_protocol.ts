// Messages between Writer (main thread) and writer_worker.ts. Types only.
import type { Synchronous } from "./db.ts";
import type { WireError } from "./op.ts";

/** One queued op: id, op name, args, `now` at enqueue time. A tuple keeps cloning cheap. */
export type WireOp = [id: number, op: string, args: unknown, now: number];

/** One settled op of a committed batch. */
export type WireResult = [id: number, ok: true, value: unknown] | [
  id: number,
  ok: false,
  error: WireError,
];

export interface InitMessage {
  type: "init";
  path: string;
  synchronous: Synchronous;
  maxBatch: number;
  /** Module URL exporting `ops`; the built-in registry when absent. */
  opsModule?: string;
}

/**
 * One batch: the ops queued on the main thread while the previous message was being committed.
 * The Worker commits them at once, in transactions of at most `maxBatch`.
 */
export interface OpsMessage {
  type: "ops";
  items: WireOp[];
}

/** Commit whatever is queued without waiting, close the connection, answer `closed`. */
export interface CloseMessage {
  type: "close";
}

export type ToWorker = InitMessage | OpsMessage | CloseMessage;

export interface ReadyMessage {
  type: "ready";
}

export interface InitErrorMessage {
  type: "init_error";
  message: string;
}

/** A COMMIT succeeded: every op of the batch settles as in `results`, in queue order. */
export interface BatchCommittedMessage {
  type: "batch";
  ok: true;
  ms: number;
  results: WireResult[];
}

/** BEGIN or COMMIT failed: nothing of the batch is on disk, every op gets `busy`. */
export interface BatchFailedMessage {
  type: "batch";
  ok: false;
  ms: number;
  ids: number[];
  error: string;
}

export interface ClosedMessage {
  type: "closed";
}

export type FromWorker =
  | ReadyMessage
  | InitErrorMessage
  | BatchCommittedMessage
  | BatchFailedMessage
  | ClosedMessage;
