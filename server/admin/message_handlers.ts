/**
 * Message records (spec 8): the list with filters and one record with its per-recipient
 * results. Never the body, never meta (spec 8, 12).
 */
import type { MessageState } from "../store/ops/receipts.ts";
import type { MessageFilter } from "../store/queries/admin_records.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { messageView, recipientView } from "./views.ts";
import {
  bad,
  httpFail,
  ok,
  pageOf,
  pageQuery,
  queryEnum,
  queryText,
  queryTime,
} from "./request.ts";

const STATES: readonly MessageState[] = ["scheduled", "dispatched", "completed"];

function states(url: URL): MessageState[] | undefined {
  const raw = url.searchParams.get("state");
  if (raw === null || raw === "") return undefined;
  const list = raw.split(",");
  for (const s of list) {
    if (!(STATES as readonly string[]).includes(s)) {
      throw bad(`state 只能是 ${STATES.join("、")}，多个用逗号分隔`);
    }
  }
  return list as MessageState[];
}

function seqCursor(raw: string): number | null {
  if (raw === "") return null;
  if (!/^\d{1,16}$/.test(raw)) throw bad("cursor 无效");
  return Number(raw);
}

/** The message handlers. */
export function messageHandlers(d: AdminDeps) {
  const { app } = d;

  /** GET /api/admin/messages: newest first; filters combine with AND. */
  async function list(req: AdminRequest): Promise<void> {
    const url = req.ctx.url;
    const { cursor, limit } = pageQuery(url);
    const filter: MessageFilter = {
      sender: queryText(url, "sender", 64),
      dest: queryText(url, "dest", 64),
      destKind: queryEnum(url, "dest_kind", ["endpoint", "group"] as const),
      recipient: queryText(url, "recipient", 64),
      id: queryText(url, "id", 64),
      states: states(url),
      from: queryTime(url, "from"),
      to: queryTime(url, "to"),
    };
    const rows = await app.store.query("admin.messages_list", {
      filter,
      beforeSeq: seqCursor(cursor),
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (m) => String(m.seq));
    ok(req.ctx, { items: page.items.map(messageView), next_cursor: page.next });
  }

  /** GET /api/admin/messages/{seq}: the record and a page of its recipients. */
  async function get(req: AdminRequest): Promise<void> {
    const raw = req.ctx.params.seq;
    if (!/^\d{1,16}$/.test(raw)) throw httpFail("not_found", "消息记录不存在");
    const seq = Number(raw);
    const rec = await app.store.query("admin.message_record", { seq });
    if (rec === null) throw httpFail("not_found", "消息记录不存在");
    const { cursor, limit } = pageQuery(req.ctx.url);
    const rows = await app.store.query("admin.message_recipients", {
      seq,
      afterId: cursor,
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (r) => r.endpoint_id);
    ok(req.ctx, {
      item: messageView(rec),
      items: page.items.map(recipientView),
      next_cursor: page.next,
    });
  }

  return { list, get };
}
