import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// The audit log (spec 8 "每个改变状态的管理请求写一条结构化日志", spec 14 M4 操作日志): one row per
// state-changing admin request, CLI action and security event. Rows carry no password, token,
// code or body (spec 12), only who, what, on which object, the result and the source address.

const SQL_INSERT = `INSERT INTO audit_log (at, actor, action, target, result, ip)
  VALUES (?, ?, ?, ?, ?, ?)`;
const SQL_OLDEST = "SELECT id, at FROM audit_log ORDER BY id LIMIT ?";
const SQL_DELETE_UPTO = "DELETE FROM audit_log WHERE id <= ?";

/** Args of `audit.record`: one audit row; `at` is the writer's clock. */
export interface AuditEntry {
  /** `admin`, `token:<name>`, `cli` or `system` (security events). */
  actor: string;
  /** A dotted action name such as `endpoint.disable` (docs/admin-api.md "Audit log"). */
  action: string;
  /** The object id, or "" when there is none. */
  target: string;
  /** `ok`, or an error code of the catalogue (spec 6.10), or `error`. */
  result: string;
  /** The client address, or "" (CLI). */
  ip: string;
}

/** `audit.record`: stores one audit row and returns its id. */
export function recordAuditRow(db: DatabaseSync, e: AuditEntry, now: number): { id: number } {
  const r = prepareCached(db, SQL_INSERT).run(now, e.actor, e.action, e.target, e.result, e.ip);
  return { id: Number(r.lastInsertRowid) };
}

/** Args of `audit.prune`. */
export interface AuditPruneArgs {
  /** Rows with `at` before this go. */
  before: number;
  /** At most this many rows per call. */
  batch: number;
}

/**
 * `audit.prune` (housekeeping): deletes the oldest audit rows older than `before`, at most
 * `batch` of them; `more` asks for another call. Ids grow with time, so it deletes a prefix.
 */
export function pruneAudit(
  db: DatabaseSync,
  a: AuditPruneArgs,
  _now: number,
): { deleted: number; more: boolean } {
  const rows = prepareCached(db, SQL_OLDEST).all(a.batch) as { id: number; at: number }[];
  let last = -1;
  let deleted = 0;
  for (const row of rows) {
    if (row.at >= a.before) break;
    last = row.id;
    deleted++;
  }
  if (deleted > 0) prepareCached(db, SQL_DELETE_UPTO).run(last);
  return { deleted, more: deleted === a.batch };
}

/** The audit ops, merged into the writer's registry in `mod.ts`. */
export const auditOps = {
  "audit.record": recordAuditRow,
  "audit.prune": pruneAudit,
};
