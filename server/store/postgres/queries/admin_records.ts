import { DELIVERY_STATES, type DeliveryState } from "../../ops/receipts.ts";
import { likeEscape, whereClause } from "../../queries/admin.ts";
import type {
  GroupFilter,
  GroupRecord,
  MemberRow,
  MessageFilter,
  MessageRecord,
  RecipientRow,
} from "../../queries/admin_records.ts";
import type { PgReader } from "../op.ts";
import { numbered } from "./admin.ts";

// Admin reads of message records and groups (spec 7.7, 8); the twin of
// server/store/queries/admin_records.ts. Never reads `message_bodies`.

const SQL_MESSAGE_COLUMNS = `SELECT m.seq, m.id, m.sender_id, m.dest_kind, m.dest_id,
  m.content_type, m.state, m.reason, m.send_at, m.created_at, m.keep, m.ttl_seconds, m.receipt
  FROM messages m`;
const SQL_MESSAGE_BY_SEQ = `${SQL_MESSAGE_COLUMNS} WHERE m.seq = $1`;
const SQL_PAGE_COUNTS = `SELECT seq, state, count(*) AS n FROM deliveries
  WHERE seq = ANY($1::bigint[]) GROUP BY seq, state`;
const SQL_RECIPIENTS = `SELECT endpoint_id, state, reason, send_at, expire_at, pushed_at,
  attempts, updated_at FROM deliveries WHERE seq = $1 AND endpoint_id > $2
  ORDER BY endpoint_id LIMIT $3`;
const SQL_M_BEFORE = "m.seq < ?";
const SQL_M_SENDER = "m.sender_id = ?";
const SQL_M_DEST = "m.dest_id = ?";
const SQL_M_DEST_KIND = "m.dest_kind = ?";
const SQL_M_ID = "m.id = ?";
const SQL_M_FROM = "m.created_at >= ?";
const SQL_M_TO = "m.created_at < ?";
const SQL_M_RECIPIENT =
  "EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = m.seq AND d.endpoint_id = ?)";
const SQL_M_STATES = "m.state = ANY(?::text[])";

const SQL_GROUP_COLUMNS = `SELECT g.id, g.name, g.owner_id, g.created_at,
  (SELECT count(*) FROM group_members gm WHERE gm.group_id = g.id) AS members FROM groups g`;
const SQL_GROUP_BY_ID = `${SQL_GROUP_COLUMNS} WHERE g.id = $1`;
const SQL_GROUP_COUNT = "SELECT count(*) AS n FROM groups g";
const SQL_G_AFTER = "g.id > ?";
const SQL_G_QUERY = "(g.id ILIKE ? ESCAPE '\\' OR g.name ILIKE ? ESCAPE '\\')";
const SQL_G_MEMBER =
  "EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = g.id AND gm.endpoint_id = ?)";
const SQL_GROUP_MEMBERS = `SELECT gm.endpoint_id AS id, coalesce(e.name, '') AS name,
  gm.joined_at FROM group_members gm LEFT JOIN endpoints e ON e.id = gm.endpoint_id
  WHERE gm.group_id = $1 AND gm.endpoint_id > $2 ORDER BY gm.endpoint_id LIMIT $3`;

type RecordRow = Omit<MessageRecord, "counts">;

function zeroCounts(): Record<DeliveryState, number> {
  return Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<DeliveryState, number>;
}

async function withCounts(r: PgReader, rows: readonly RecordRow[]): Promise<MessageRecord[]> {
  const out = rows.map((x) => ({ ...x, counts: zeroCounts() }));
  if (out.length === 0) return out;
  const bySeq = new Map(out.map((x) => [x.seq, x]));
  const counts = await r.q<{ seq: number; state: DeliveryState; n: number }>(SQL_PAGE_COUNTS, [
    [...bySeq.keys()],
  ]);
  for (const c of counts) {
    const rec = bySeq.get(c.seq);
    if (rec !== undefined) rec.counts[c.state] = c.n;
  }
  return out;
}

/** One page of message records, newest first, below `beforeSeq`. */
export async function listMessages(
  r: PgReader,
  f: MessageFilter,
  beforeSeq: number | null,
  limit: number,
): Promise<MessageRecord[]> {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    if (value === undefined) return;
    parts.push(sql);
    params.push(value);
  };
  add(SQL_M_BEFORE, beforeSeq ?? undefined);
  add(SQL_M_SENDER, f.sender);
  add(SQL_M_DEST, f.dest);
  add(SQL_M_DEST_KIND, f.destKind);
  add(SQL_M_ID, f.id);
  add(SQL_M_FROM, f.from);
  add(SQL_M_TO, f.to);
  add(SQL_M_RECIPIENT, f.recipient);
  add(SQL_M_STATES, f.states === undefined ? undefined : [...f.states]);
  const sql = numbered(`${SQL_MESSAGE_COLUMNS}${whereClause(parts)} ORDER BY m.seq DESC LIMIT ?`);
  return withCounts(r, await r.q<RecordRow>(sql, [...params, limit]));
}

/** One message record by seq, or null. */
export async function messageRecord(r: PgReader, seq: number): Promise<MessageRecord | null> {
  const row = (await r.q<RecordRow>(SQL_MESSAGE_BY_SEQ, [seq]))[0];
  return row === undefined ? null : (await withCounts(r, [row]))[0];
}

/** One page of a message's deliveries by endpoint id after `afterId`. */
export async function messageRecipients(
  r: PgReader,
  seq: number,
  afterId: string,
  limit: number,
): Promise<RecipientRow[]> {
  return [...(await r.q<RecipientRow>(SQL_RECIPIENTS, [seq, afterId, limit]))];
}

function groupWhere(f: GroupFilter): { parts: string[]; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (f.q !== undefined && f.q !== "") {
    const q = likeEscape(f.q);
    parts.push(SQL_G_QUERY);
    params.push(`${q}%`, `%${q}%`);
  }
  if (f.member !== undefined) {
    parts.push(SQL_G_MEMBER);
    params.push(f.member);
  }
  return { parts, params };
}

/** One page of groups by id after `afterId`. */
export async function listGroups(
  r: PgReader,
  f: GroupFilter,
  afterId: string,
  limit: number,
): Promise<GroupRecord[]> {
  const { parts, params } = groupWhere(f);
  if (afterId !== "") {
    parts.push(SQL_G_AFTER);
    params.push(afterId);
  }
  const sql = numbered(`${SQL_GROUP_COLUMNS}${whereClause(parts)} ORDER BY g.id LIMIT ?`);
  return [...(await r.q<GroupRecord>(sql, [...params, limit]))];
}

/** How many groups match `f`. */
export async function countGroups(r: PgReader, f: GroupFilter): Promise<number> {
  const { parts, params } = groupWhere(f);
  return (await r.q<{ n: number }>(numbered(`${SQL_GROUP_COUNT}${whereClause(parts)}`), params))[0]
    .n;
}

/** One group, or null. */
export async function groupRecord(r: PgReader, id: string): Promise<GroupRecord | null> {
  return (await r.q<GroupRecord>(SQL_GROUP_BY_ID, [id]))[0] ?? null;
}

/** One page of a group's members by endpoint id after `afterId`. */
export async function groupMembers(
  r: PgReader,
  groupId: string,
  afterId: string,
  limit: number,
): Promise<MemberRow[]> {
  return [...(await r.q<MemberRow>(SQL_GROUP_MEMBERS, [groupId, afterId, limit]))];
}
