import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { DELIVERY_STATES, type DeliveryState, type MessageState } from "../ops/receipts.ts";
import { likeEscape, whereClause } from "./admin.ts";
import type { GroupView, MessageRecordView, RecipientRecordView } from "../../admin/schemas.ts";

// Admin reads of message records and groups (spec 7.7, 8). The message reads touch only
// `messages` and `deliveries`, never `message_bodies` (spec 7.7: "后台查询只访问 messages 和
// deliveries"), and select neither `meta` nor the body encoding.

const SQL_MESSAGE_COLUMNS = `SELECT m.seq, m.id, m.sender_id, m.dest_kind, m.dest_id,
  m.content_type, m.state, m.reason, m.send_at, m.created_at, m.keep, m.ttl_seconds, m.receipt
  FROM messages m`;
const SQL_MESSAGE_BY_SEQ = `${SQL_MESSAGE_COLUMNS} WHERE m.seq = ?`;
const SQL_PAGE_COUNTS = `SELECT seq, state, count(*) AS n FROM deliveries
  WHERE seq IN (SELECT value FROM json_each(?)) GROUP BY seq, state`;
const SQL_RECIPIENTS = `SELECT endpoint_id, state, reason, send_at, expire_at, pushed_at,
  attempts, updated_at FROM deliveries WHERE seq = ? AND endpoint_id > ?
  ORDER BY endpoint_id LIMIT ?`;
// Filter fragments of the message list; the WHERE clause is built only from these.
const SQL_M_BEFORE = "m.seq < ?";
const SQL_M_SENDER = "m.sender_id = ?";
const SQL_M_DEST = "m.dest_id = ?";
const SQL_M_DEST_KIND = "m.dest_kind = ?";
const SQL_M_ID = "m.id = ?";
const SQL_M_FROM = "m.created_at >= ?";
const SQL_M_TO = "m.created_at < ?";
const SQL_M_RECIPIENT =
  "EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = m.seq AND d.endpoint_id = ?)";
const SQL_M_STATES = "m.state IN (SELECT value FROM json_each(?))";

const SQL_GROUP_COLUMNS = `SELECT g.id, g.name, g.owner_id, g.created_at,
  (SELECT count(*) FROM group_members gm WHERE gm.group_id = g.id) AS members FROM groups g`;
const SQL_GROUP_BY_ID = `${SQL_GROUP_COLUMNS} WHERE g.id = ?`;
const SQL_GROUP_COUNT = "SELECT count(*) AS n FROM groups g";
const SQL_G_AFTER = "g.id > ?";
const SQL_G_QUERY = "(g.id LIKE ? ESCAPE '\\' OR g.name LIKE ? ESCAPE '\\')";
const SQL_G_MEMBER =
  "EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = g.id AND gm.endpoint_id = ?)";
const SQL_GROUP_MEMBERS = `SELECT gm.endpoint_id AS id, coalesce(e.name, '') AS name,
  gm.joined_at FROM group_members gm LEFT JOIN endpoints e ON e.id = gm.endpoint_id
  WHERE gm.group_id = ? AND gm.endpoint_id > ? ORDER BY gm.endpoint_id LIMIT ?`;

/**
 * A message record as read: the admin API's shape (server/admin/schemas.ts), no body, no meta
 * (spec 8), with `keep` and `receipt` still SQLite's 0 or 1 (server/admin/views.ts makes them
 * booleans).
 */
export type MessageRecord = Omit<MessageRecordView, "keep" | "receipt" | "state"> & {
  state: MessageState;
  keep: number;
  receipt: number;
};

/** Filters of the message list; all combine with AND. */
export interface MessageFilter {
  sender?: string;
  dest?: string;
  destKind?: "endpoint" | "group";
  /** Messages with a delivery to this endpoint. */
  recipient?: string;
  id?: string;
  states?: readonly MessageState[];
  /** created_at >= from */
  from?: number;
  /** created_at < to */
  to?: number;
}

function zeroCounts(): Record<DeliveryState, number> {
  return Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<DeliveryState, number>;
}

type RecordRow = Omit<MessageRecord, "counts">;

function withCounts(db: DatabaseSync, rows: RecordRow[]): MessageRecord[] {
  const out = rows.map((r) => ({ ...r, counts: zeroCounts() }));
  if (out.length === 0) return out;
  const bySeq = new Map(out.map((r) => [r.seq, r]));
  const counts = prepareCached(db, SQL_PAGE_COUNTS).all(JSON.stringify([...bySeq.keys()])) as {
    seq: number;
    state: DeliveryState;
    n: number;
  }[];
  for (const c of counts) {
    const rec = bySeq.get(c.seq);
    if (rec !== undefined) rec.counts[c.state] = c.n;
  }
  return out;
}

/** One page of message records, newest first, with `seq` below `beforeSeq` (null: from the top). */
export function listMessages(
  db: DatabaseSync,
  f: MessageFilter,
  beforeSeq: number | null,
  limit: number,
): MessageRecord[] {
  const parts: string[] = [];
  const params: SQLInputValue[] = [];
  const add = (sql: string, value: SQLInputValue | undefined) => {
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
  add(SQL_M_STATES, f.states === undefined ? undefined : JSON.stringify(f.states));
  const sql = `${SQL_MESSAGE_COLUMNS}${whereClause(parts)} ORDER BY m.seq DESC LIMIT ?`;
  const rows = prepareCached(db, sql).all(...params, limit) as unknown as RecordRow[];
  return withCounts(db, rows);
}

/** One message record by seq, or null when it is gone. */
export function messageRecord(db: DatabaseSync, seq: number): MessageRecord | null {
  const row = prepareCached(db, SQL_MESSAGE_BY_SEQ).get(seq) as RecordRow | undefined;
  return row === undefined ? null : withCounts(db, [row])[0];
}

/** One recipient's delivery as the admin API shows it (its schema is in server/admin/schemas.ts). */
export type RecipientRow = RecipientRecordView;

/** One page of a message's deliveries, ordered by endpoint id after `afterId`. */
export function messageRecipients(
  db: DatabaseSync,
  seq: number,
  afterId: string,
  limit: number,
): RecipientRow[] {
  return prepareCached(db, SQL_RECIPIENTS).all(seq, afterId, limit) as unknown as RecipientRow[];
}

/** A group as the admin API lists it (its schema is in server/admin/schemas.ts). */
export type GroupRecord = GroupView;

/** Filters of the group list. */
export interface GroupFilter {
  /** Id prefix or name substring. */
  q?: string;
  /** Groups this endpoint is a member of. */
  member?: string;
}

function groupWhere(f: GroupFilter): { parts: string[]; params: SQLInputValue[] } {
  const parts: string[] = [];
  const params: SQLInputValue[] = [];
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

/** One page of groups ordered by id after `afterId`. */
export function listGroups(
  db: DatabaseSync,
  f: GroupFilter,
  afterId: string,
  limit: number,
): GroupRecord[] {
  const { parts, params } = groupWhere(f);
  if (afterId !== "") {
    parts.push(SQL_G_AFTER);
    params.push(afterId);
  }
  const sql = `${SQL_GROUP_COLUMNS}${whereClause(parts)} ORDER BY g.id LIMIT ?`;
  return prepareCached(db, sql).all(...params, limit) as unknown as GroupRecord[];
}

/** How many groups match `f`. */
export function countGroups(db: DatabaseSync, f: GroupFilter): number {
  const { parts, params } = groupWhere(f);
  const sql = `${SQL_GROUP_COUNT}${whereClause(parts)}`;
  return (prepareCached(db, sql).get(...params) as { n: number }).n;
}

/** One group, or null. */
export function groupRecord(db: DatabaseSync, id: string): GroupRecord | null {
  return (prepareCached(db, SQL_GROUP_BY_ID).get(id) as GroupRecord | undefined) ?? null;
}

/** A member line of the group detail. */
export interface MemberRow {
  id: string;
  name: string;
  joined_at: number;
}

/** One page of a group's members ordered by endpoint id after `afterId`. */
export function groupMembers(
  db: DatabaseSync,
  groupId: string,
  afterId: string,
  limit: number,
): MemberRow[] {
  return prepareCached(db, SQL_GROUP_MEMBERS).all(
    groupId,
    afterId,
    limit,
  ) as unknown as MemberRow[];
}
