import type { AuditFilter, AuditRecord } from "../../queries/audit.ts";
import { whereClause } from "../../queries/admin.ts";
import type { PgReader } from "../op.ts";
import { numbered } from "./admin.ts";

// The 操作日志 list; the twin of server/store/queries/audit.ts. Fragments use `?`, numbered once
// the statement is assembled.

const SQL_COLUMNS = "SELECT id, at, actor, action, target, result, ip FROM audit_log";
const SQL_A_BEFORE = "id < ?";
const SQL_A_FROM = "at >= ?";
const SQL_A_TO = "at < ?";
const SQL_A_ACTOR = "actor = ?";
const SQL_A_ACTION = "(action = ? OR substr(action, 1, length(?) + 1) = ? || '.')";
const SQL_A_TARGET = "target = ?";
const SQL_A_RESULT = "result = ?";

/** One page of audit rows, newest first, with `id` below `beforeId` (null: from the top). */
export async function listAudit(
  r: PgReader,
  f: AuditFilter,
  beforeId: number | null,
  limit: number,
): Promise<AuditRecord[]> {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, ...values: unknown[]) => {
    if (values[0] === undefined) return;
    parts.push(sql);
    params.push(...values);
  };
  add(SQL_A_BEFORE, beforeId ?? undefined);
  add(SQL_A_FROM, f.from);
  add(SQL_A_TO, f.to);
  add(SQL_A_ACTOR, f.actor);
  add(SQL_A_ACTION, f.action, f.action, f.action);
  add(SQL_A_TARGET, f.target);
  add(SQL_A_RESULT, f.result);
  const sql = numbered(`${SQL_COLUMNS}${whereClause(parts)} ORDER BY id DESC LIMIT ?`);
  return (await r.q<AuditRecord>(sql, [...params, limit])).map((a) => ({
    id: Number(a.id),
    at: Number(a.at),
    actor: a.actor,
    action: a.action,
    target: a.target,
    result: a.result,
    ip: a.ip,
  }));
}
