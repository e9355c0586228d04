import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { AuditRecordView } from "../../admin/schemas.ts";
import { prepareCached } from "../db.ts";
import { whereClause } from "./admin.ts";

// The 操作日志 list (spec 14 M4): newest first, filters combine with AND, cursor = the last id.

const SQL_COLUMNS = "SELECT id, at, actor, action, target, result, ip FROM audit_log";
// Filter fragments; the WHERE clause is built only from these.
const SQL_A_BEFORE = "id < ?";
const SQL_A_FROM = "at >= ?";
const SQL_A_TO = "at < ?";
const SQL_A_ACTOR = "actor = ?";
const SQL_A_ACTION = "(action = ? OR substr(action, 1, length(?) + 1) = ? || '.')";
const SQL_A_TARGET = "target = ?";
const SQL_A_RESULT = "result = ?";

/** One audit row as the admin API shows it (its schema is in server/admin/schemas.ts). */
export type AuditRecord = AuditRecordView;

/** Filters of the audit list; all combine with AND. */
export interface AuditFilter {
  /** at >= from */
  from?: number;
  /** at < to */
  to?: number;
  actor?: string;
  /** An action (`endpoint.kick`) or a family (`endpoint` matches every `endpoint.*`). */
  action?: string;
  target?: string;
  result?: string;
}

/** One page of audit rows, newest first, with `id` below `beforeId` (null: from the top). */
export function listAudit(
  db: DatabaseSync,
  f: AuditFilter,
  beforeId: number | null,
  limit: number,
): AuditRecord[] {
  const parts: string[] = [];
  const params: SQLInputValue[] = [];
  const add = (sql: string, ...values: (SQLInputValue | undefined)[]) => {
    if (values[0] === undefined) return;
    parts.push(sql);
    params.push(...values as SQLInputValue[]);
  };
  add(SQL_A_BEFORE, beforeId ?? undefined);
  add(SQL_A_FROM, f.from);
  add(SQL_A_TO, f.to);
  add(SQL_A_ACTOR, f.actor);
  add(SQL_A_ACTION, f.action, f.action, f.action);
  add(SQL_A_TARGET, f.target);
  add(SQL_A_RESULT, f.result);
  const sql = `${SQL_COLUMNS}${whereClause(parts)} ORDER BY id DESC LIMIT ?`;
  return prepareCached(db, sql).all(...params, limit) as unknown as AuditRecord[];
}
