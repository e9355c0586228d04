/**
 * The one entry point for audit rows (spec 8, 14 M4 操作日志): admin requests (server/admin/
 * guards.ts), security events (server/auth/security_log.ts) and anything else that must appear in
 * the console's audit log call {@link recordAudit}. The CLI, which has no running store, runs
 * the `audit.record` op itself (SQLite: in its own transaction).
 */
import type { Logger } from "../log/log.ts";
import type { Store } from "../store/store.ts";
import type { AuditEntry } from "../store/ops/audit.ts";

export type { AuditEntry } from "../store/ops/audit.ts";

/** What {@link recordAudit} writes through. */
export interface AuditSink {
  readonly store: Pick<Store, "run">;
  readonly log: Logger;
}

/** Longest stored field; longer values are cut (a batch target is already at most 50 ids). */
const MAX_FIELD = 2048;

function cut(s: string): string {
  return s.length <= MAX_FIELD ? s : `${s.slice(0, MAX_FIELD - 1)}…`;
}

/**
 * Stores one audit row through the writer. It never rejects: the action it records has already
 * happened, so a failed write is logged (without the entry's values beyond its action) and
 * dropped. Await it where the row must be visible next (tests); otherwise it may run detached.
 *
 * @example
 * ```ts
 * void recordAudit(app, { actor: "system", action: "lockout.start", target: "door-1",
 *   result: "login/endpoint", ip: "" });
 * ```
 */
export async function recordAudit(sink: AuditSink, entry: AuditEntry): Promise<void> {
  try {
    await sink.store.run("audit.record", {
      actor: cut(entry.actor),
      action: cut(entry.action),
      target: cut(entry.target),
      result: cut(entry.result),
      ip: cut(entry.ip),
    });
  } catch (err) {
    sink.log.error("audit record failed", {
      action: entry.action,
      error: (err as Error).message,
    });
  }
}
