/**
 * How the fault tests count, wait and report (issue 35). Shared by the Deno tests in tests/ and
 * the SDK's node tests in sdk/ts/test/ (so only node: modules here, no Deno APIs).
 *
 * A fault test waits, bounded, until what it expects has arrived ({@linkcode settle}) and then for a
 * quiet window after the last event, so that a late duplicate is seen. It never throws on that
 * wait: it counts what it observed ({@linkcode countFaults}), prints the counts and writes them as
 * one JSON line to the summary ({@linkcode reportFaults}), and only then asserts them, so that a
 * loss fails with `lost=N` and the ids, never as a timeout.
 *
 * The summary: when `NIXMSG_FAULT_SUMMARY_DIR` is set (tests/run.sh sets it), each row is appended
 * to `<dir>/<pid>.jsonl`; `deno run -A scripts/reliability_tables.ts collect <dir>` merges the lines
 * into one summary file and `… write <summary>` regenerates the fault table of docs/RELIABILITY.md.
 *
 * @example
 * ```ts
 * const s = await settle({ done: () => b.hasAll(ids), subscribe: (f) => b.watch(f), timeoutMs });
 * reportFaults({ key: "crash-matrix/x", fault: "…", ...countFaults(ids, b), crashes: 0, ms: s.ms });
 * ```
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** The environment variable naming the directory the rows are appended to. */
export const SUMMARY_DIR_ENV = "NIXMSG_FAULT_SUMMARY_DIR";

/** The figures of one fault test run: one line of the summary, one row of the fault table. */
export interface FaultRow {
  /** The table row this run fills (scripts/reliability_tables.ts), e.g. `crash-matrix/after-send`. */
  key: string;
  /** What was done, for the log. */
  fault: string;
  /** Messages (or, for a test of endpoints, endpoints) that had to arrive. */
  messages: number;
  /** Expected and never observed by the receiving application. */
  lost: number;
  /** The first lost ids (at most 20). */
  lost_ids: string[];
  /** Seen by the application again after its ack was answered (or a second callback run). */
  duplicated: number;
  /** Handed again before the ack, hidden from the application by dedup (null: not observable). */
  redelivered: number | null;
  /** Server exits nobody asked for. */
  crashes: number;
  /** How long the run took, ms. */
  ms: number;
  /** Further figures for the table's scale column (kills, packets, pushes, …). */
  figures: Record<string, number>;
  /** When the row was written (ISO 8601) and the 1-minute load average per core then. */
  at: string;
  load_per_core: number;
}

/** What a test observed of one receiver. */
export interface Observed {
  /** Whether the application got `id`. */
  has(id: string): boolean;
  /** Application-visible duplicates. */
  duplicates: number;
  /** Redeliveries dedup hid (null: the test cannot see them, e.g. the SDK hides them). */
  redelivered: number | null;
}

/** Lost, duplicated and redelivered over `receivers`, each of which should hold every id. */
export function countFaults(
  ids: readonly string[],
  receivers: readonly Observed[],
): Pick<FaultRow, "messages" | "lost" | "lost_ids" | "duplicated" | "redelivered"> {
  const lostIds: string[] = [];
  let duplicated = 0;
  let redelivered: number | null = 0;
  for (const r of receivers) {
    for (const id of ids) if (!r.has(id)) lostIds.push(id);
    duplicated += r.duplicates;
    redelivered = redelivered === null || r.redelivered === null
      ? null
      : redelivered + r.redelivered;
  }
  return {
    messages: ids.length * receivers.length,
    lost: lostIds.length,
    lost_ids: lostIds.slice(0, 20),
    duplicated,
    redelivered,
  };
}

/** The 1-minute load average per core (0 where the platform has none). */
export function loadPerCore(): number {
  return loadavg()[0]! / Math.max(1, cpus().length);
}

/**
 * A wait that scales with the work and the machine and stays bounded: `baseMs` plus `perUnitMs`
 * for each of `units` (packets, messages, …), times the load factor (the load average per core,
 * from 1 to 4), at most `capMs`.
 */
export function scaledMs(
  baseMs: number,
  opts: { units?: number; perUnitMs?: number; capMs?: number } = {},
): number {
  const work = baseMs + (opts.units ?? 0) * (opts.perUnitMs ?? 0);
  const factor = Math.min(4, Math.max(1, loadPerCore()));
  return Math.round(Math.min(opts.capMs ?? 600_000, work * factor));
}

/**
 * The quiet window after the last ack: a `msg` pushed again after its ack was answered would come
 * within it (a re-push follows a reconnect or the ack timeout; the tests' servers push at once).
 */
export const QUIET_MS = scaledMs(1500, { capMs: 6000 });
/** No frame and no ack answer for this long while acks are missing: nothing more is coming. */
export const STALL_MS = scaledMs(5000, { capMs: 20_000 });

/** How a {@linkcode settle} ended. */
export interface Settled {
  /** `done()` held at the end (false: the bound or a stall came first). */
  done: boolean;
  /** Events seen during the quiet window (each reopened it). */
  late: number;
  ms: number;
}

/**
 * Waits until `done()` holds, then until `quietMs` pass without an event (so that late arrivals
 * are counted). Bounded: the first wait ends after `timeoutMs`, or earlier after `stallMs` (when
 * given) without any event — nothing is moving, so what is missing is lost; the quiet window ends
 * after another `timeoutMs` at most. Never rejects: the caller counts what it observed.
 * `subscribe` registers a listener called on each event and returns its removal.
 */
export function settle(opts: {
  done: () => boolean;
  subscribe: (onEvent: () => void) => () => void;
  timeoutMs: number;
  quietMs: number;
  stallMs?: number;
}): Promise<Settled> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    let late = 0;
    let inQuiet = false;
    let bound: ReturnType<typeof setTimeout> | undefined;
    let idle: ReturnType<typeof setTimeout> | undefined;
    let unsubscribe = () => {};
    const finish = () => {
      clearTimeout(bound);
      clearTimeout(idle);
      unsubscribe();
      resolve({ done: opts.done(), late, ms: Date.now() - t0 });
    };
    /** Restarts the idle timer: the quiet window once done, the stall window before. */
    const rearm = () => {
      clearTimeout(idle);
      const ms = inQuiet ? opts.quietMs : opts.stallMs;
      if (ms !== undefined) idle = setTimeout(finish, ms);
    };
    const startQuiet = () => {
      inQuiet = true;
      clearTimeout(bound);
      bound = setTimeout(finish, opts.timeoutMs);
      rearm();
    };
    const onEvent = () => {
      if (inQuiet) late++;
      else if (opts.done()) return startQuiet();
      rearm();
    };
    bound = setTimeout(finish, opts.timeoutMs);
    unsubscribe = opts.subscribe(onEvent);
    if (opts.done()) startQuiet();
    else rearm();
  });
}

/** `lost=N (ids …), duplicated=N` when the row shows a fault, else null. */
export function faultVerdict(row: Pick<FaultRow, "key" | "lost" | "lost_ids" | "duplicated">) {
  if (row.lost === 0 && row.duplicated === 0) return null;
  const ids = row.lost_ids.length ? ` (ids ${row.lost_ids.join(" ")})` : "";
  return `${row.key}: lost=${row.lost}${ids}, duplicated=${row.duplicated}`;
}

/**
 * Prints the row (`fault-summary {...}`), appends it to the summary when
 * `NIXMSG_FAULT_SUMMARY_DIR` is set, then throws when anything was lost or duplicated.
 */
export function reportFaults(row: Omit<FaultRow, "at" | "load_per_core">, detail = ""): FaultRow {
  const full: FaultRow = {
    ...row,
    at: new Date().toISOString(),
    load_per_core: Math.round(loadPerCore() * 100) / 100,
  };
  const line = JSON.stringify(full);
  console.log(`fault-summary ${line}`);
  const dir = process.env[SUMMARY_DIR_ENV];
  if (dir) {
    mkdirSync(dir, { recursive: true });
    appendFileSync(join(dir, `${process.pid}.jsonl`), `${line}\n`);
  }
  const verdict = faultVerdict(full);
  if (verdict !== null) throw new Error(detail ? `${verdict}\n${detail}` : verdict);
  return full;
}
