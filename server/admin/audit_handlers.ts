/**
 * The 操作日志 list (spec 8, 14 M4): audit rows of admin requests, CLI actions and security
 * events, newest first, with filters and a cursor.
 */
import type { AuditFilter } from "../store/queries/audit.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import type { AuditRecordView } from "./schemas.ts";
import { bad, ok, pageOf, pageQuery, queryText, queryTime } from "./request.ts";

function idCursor(raw: string): number | null {
  if (raw === "") return null;
  if (!/^\d{1,16}$/.test(raw)) throw bad("cursor 无效");
  return Number(raw);
}

/** The audit handlers. */
export function auditHandlers(d: AdminDeps) {
  const { app } = d;

  /** GET /api/admin/audit: filters combine with AND; `action` also matches a family prefix. */
  async function list(req: AdminRequest): Promise<void> {
    const url = req.ctx.url;
    const { cursor, limit } = pageQuery(url);
    const filter: AuditFilter = {
      from: queryTime(url, "from"),
      to: queryTime(url, "to"),
      actor: queryText(url, "actor", 128),
      action: queryText(url, "action", 64),
      target: queryText(url, "target", 256),
      result: queryText(url, "result", 64),
    };
    const rows = await app.store.query("audit.list", {
      filter,
      beforeId: idCursor(cursor),
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (r) => String(r.id));
    const items: AuditRecordView[] = page.items;
    ok(req.ctx, { items, next_cursor: page.next });
  }

  return { list };
}
