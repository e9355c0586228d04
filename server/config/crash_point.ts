// Test-only crash points (issue 14, the kill -9 matrix): `NIXMSG_TEST_CRASH_AT=<name>[:<n>]` makes
// the process SIGKILL itself the n-th time (default the first) code passes `crashPoint(name)`.
// The variable is read once, when this module loads (main thread and each Worker); unset, a
// crash point costs one comparison. Never set it in production.

/** The places a test can kill the server at. */
export type CrashPointName =
  /** A `send` committed, its `resp` not yet sent. */
  | "send_committed"
  /**
   * A `send` committed together with the push mark of its online receiver (message.submit with
   * a lent claim), neither its `resp` nor the `msg` sent yet.
   */
  | "send_marked"
  /** A push mark committed (delivery.claim), the `msg` not yet published. */
  | "after_mark"
  /** A `msg` published and its PUBACK received, the application `ack` not yet in. */
  | "after_publish"
  /** One row of a CSV import inserted, the import's transaction still open. */
  | "import_row"
  /** A migration's SQL applied, its transaction not yet committed. */
  | "migration";

/** The environment variable that arms a crash point. */
export const CRASH_ENV = "NIXMSG_TEST_CRASH_AT";

/** Parses `<name>[:<n>]`; null when unset or malformed. */
export function parseCrashAt(value: string | undefined): { name: string; n: number } | null {
  const m = /^([a-z_]+)(?::([1-9][0-9]*))?$/.exec(value ?? "");
  return m ? { name: m[1], n: m[2] ? Number(m[2]) : 1 } : null;
}

function readArmed(): { name: string; n: number } | null {
  try {
    return parseCrashAt(Deno.env.get(CRASH_ENV));
  } catch {
    return null; // no env permission: never armed
  }
}

const armed = readArmed();
let hits = 0;

/** Kills this process with SIGKILL when `name` is the armed crash point and its count is due. */
export function crashPoint(name: CrashPointName): void {
  if (armed === null || armed.name !== name || ++hits < armed.n) return;
  Deno.kill(Deno.pid, "SIGKILL");
}
