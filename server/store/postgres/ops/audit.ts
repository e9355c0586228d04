import type { AuditEntry, AuditPruneArgs } from "../../ops/audit.ts";
import type { PgTx } from "../op.ts";

// The audit log's writes (spec 8, 14 M4 操作日志); the twin of server/store/ops/audit.ts.

const SQL_INSERT = `INSERT INTO audit_log (at, actor, action, target, result, ip)
  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`;
const SQL_OLDEST = "SELECT id, at FROM audit_log ORDER BY id LIMIT $1";
const SQL_DELETE_UPTO = "DELETE FROM audit_log WHERE id <= $1";

/** `audit.record`: stores one audit row and returns its id. */
async function record(t: PgTx, e: AuditEntry, now: number): Promise<{ id: number }> {
  const rows = await t.q<{ id: number }>(SQL_INSERT, [
    now,
    e.actor,
    e.action,
    e.target,
    e.result,
    e.ip,
  ]);
  return { id: Number(rows[0].id) };
}

/** `audit.prune`: the oldest rows older than `before`, at most `batch`; ids grow with time. */
async function prune(
  t: PgTx,
  a: AuditPruneArgs,
  _now: number,
): Promise<{ deleted: number; more: boolean }> {
  const rows = await t.q<{ id: number; at: number }>(SQL_OLDEST, [a.batch]);
  let last = -1;
  let deleted = 0;
  for (const row of rows) {
    if (Number(row.at) >= a.before) break;
    last = Number(row.id);
    deleted++;
  }
  if (deleted > 0) await t.q(SQL_DELETE_UPTO, [last]);
  return { deleted, more: deleted === a.batch };
}

/** The audit ops. */
export const pgAuditOps = {
  "audit.record": record,
  "audit.prune": prune,
};
