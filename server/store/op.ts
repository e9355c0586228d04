import type { DatabaseSync } from "node:sqlite";
import { OpError } from "./op_error.ts";

export { OpError } from "./op_error.ts";

/**
 * A write op (DESIGN "The writer"): runs inside the writer's transaction, in its own SAVEPOINT.
 * `now` is the clock at enqueue time. Args and result must be structured-clonable plain data.
 */
export type Op<A, R> = (db: DatabaseSync, args: A, now: number) => R;

/** A table of ops by name, such as `ops` in `ops/mod.ts`. */
export type OpRegistry = Record<string, Op<never, unknown>>;

/** The `args` type of an op. */
export type OpArgs<F> = F extends (db: DatabaseSync, args: infer A, now: number) => unknown ? A
  : never;

/** The result type of an op. */
export type OpResult<F> = F extends (db: DatabaseSync, args: never, now: number) => infer R ? R
  : never;

/** An op failure as it travels from the Worker to the main thread. */
export interface WireError {
  /** Present when the op threw an {@link OpError}. */
  code?: string;
  message: string;
  data?: Record<string, unknown>;
}

/** Turns anything an op threw into a {@link WireError}. */
export function toWireError(err: unknown): WireError {
  if (err instanceof OpError) {
    const wire: WireError = { code: err.code, message: err.message };
    if (err.data !== undefined) wire.data = err.data;
    return wire;
  }
  return { message: err instanceof Error ? err.message : String(err) };
}

/**
 * Rebuilds the main-thread error for a {@link WireError}. An OpError keeps its code and data;
 * anything else becomes `busy` (STYLE: unknown errors never reach the client), with the original
 * message kept in `cause` for the logs.
 */
export function fromWireError(wire: WireError, op: string): OpError {
  if (wire.code !== undefined) {
    return new OpError(wire.code, wire.data, wire.message);
  }
  return new OpError("busy", undefined, `Op ${op} failed`, { cause: wire.message });
}
