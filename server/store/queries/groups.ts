import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";

// Group reads for the main thread's read connection (spec 6.7 group.list, group.get; 7.2).
// Pages are ordered by id; `next_cursor` is the last id of the page, "" after the last page.

const SQL_MY_GROUPS = `SELECT g.id, g.name, g.owner_id,
    (SELECT count(*) FROM group_members c WHERE c.group_id = g.id) AS member_count
  FROM group_members m JOIN groups g ON g.id = m.group_id
  WHERE m.endpoint_id = ? AND g.id > ? ORDER BY g.id LIMIT ?`;
const SQL_GROUP = `SELECT g.id, g.name, g.owner_id,
    (SELECT count(*) FROM group_members c WHERE c.group_id = g.id) AS member_count
  FROM groups g WHERE g.id = ?`;
const SQL_IS_MEMBER = "SELECT 1 AS found FROM group_members WHERE group_id = ? AND endpoint_id = ?";
const SQL_MEMBERS_PAGE = `SELECT m.endpoint_id AS id, coalesce(e.name, '') AS name
  FROM group_members m LEFT JOIN endpoints e ON e.id = m.endpoint_id
  WHERE m.group_id = ? AND m.endpoint_id > ? ORDER BY m.endpoint_id LIMIT ?`;
const SQL_MEMBER_IDS =
  "SELECT endpoint_id FROM group_members WHERE group_id = ? ORDER BY endpoint_id";

/** spec 6.7: `limit` of group.list and group.get is at most 200. */
export const MAX_GROUP_PAGE_LIMIT = 200;

/** One group of `group.list` (spec 6.7). */
export interface GroupSummary {
  id: string;
  name: string;
  owner_id: string;
  member_count: number;
}

/** One member line of `group.get`. */
export interface GroupMemberItem {
  id: string;
  name: string;
  online: boolean;
}

/** The answer to `group.get` (spec 6.7). */
export interface GroupDetail extends GroupSummary {
  members: GroupMemberItem[];
  next_cursor: string;
}

function pageSize(limit: number): number {
  return Math.max(1, Math.min(MAX_GROUP_PAGE_LIMIT, Math.trunc(limit) || 1));
}

/** Splits `rows` (fetched with one extra) into a page and its next cursor. */
function page<T extends { id: string }>(rows: T[], size: number): [T[], string] {
  const items = rows.slice(0, size);
  return [items, rows.length > size ? items[items.length - 1].id : ""];
}

/**
 * `group.list` (spec 6.7): the groups `endpointId` belongs to, by group id after `cursor`.
 *
 * @example
 * ```ts
 * const first = listMyGroups(readDb, "a", "", 100);
 * const second = listMyGroups(readDb, "a", first.next_cursor, 100);
 * ```
 */
export function listMyGroups(
  db: DatabaseSync,
  endpointId: string,
  cursor: string,
  limit: number,
): { items: GroupSummary[]; next_cursor: string } {
  const size = pageSize(limit);
  const rows = prepareCached(db, SQL_MY_GROUPS).all(
    endpointId,
    cursor,
    size + 1,
  ) as unknown as GroupSummary[];
  const [items, next] = page(rows, size);
  const plain = items.map((r) => ({
    id: r.id,
    name: r.name,
    owner_id: r.owner_id,
    member_count: r.member_count,
  }));
  return { items: plain, next_cursor: next };
}

/**
 * `group.get` (spec 6.7): the group and a page of its members by id after `cursor`; `online`
 * comes from `isOnline` (the connection table), not from the database.
 *
 * @throws {OpError} `not_found` for an unknown group, `not_member` when the caller is not in it.
 */
export function getGroup(
  db: DatabaseSync,
  callerId: string,
  groupId: string,
  cursor: string,
  limit: number,
  isOnline: (id: string) => boolean,
): GroupDetail {
  return withMembersOnline(groupPage(db, callerId, groupId, cursor, limit), isOnline);
}

/** `group.get` as stored: members without `online` (query `group.get`). */
export interface GroupPage extends GroupSummary {
  members: { id: string; name: string }[];
  next_cursor: string;
}

/** {@link getGroup} without the connection table; same refusals. */
export function groupPage(
  db: DatabaseSync,
  callerId: string,
  groupId: string,
  cursor: string,
  limit: number,
): GroupPage {
  const g = prepareCached(db, SQL_GROUP).get(groupId) as GroupSummary | undefined;
  if (g === undefined) throw new OpError("not_found");
  if (prepareCached(db, SQL_IS_MEMBER).get(groupId, callerId) === undefined) {
    throw new OpError("not_member");
  }
  const size = pageSize(limit);
  const rows = prepareCached(db, SQL_MEMBERS_PAGE).all(groupId, cursor, size + 1) as {
    id: string;
    name: string;
  }[];
  const [items, next] = page(rows, size);
  return {
    id: g.id,
    name: g.name,
    owner_id: g.owner_id,
    member_count: g.member_count,
    members: items.map((r) => ({ id: r.id, name: r.name })),
    next_cursor: next,
  };
}

/** The `group.get` answer: {@link GroupPage} with `online` from the connection table. */
export function withMembersOnline(
  g: GroupPage,
  isOnline: (id: string) => boolean,
): GroupDetail {
  return {
    ...g,
    members: g.members.map((m) => ({ id: m.id, name: m.name, online: isOnline(m.id) })),
  };
}

/** Every member of a group by id (empty for an unknown group): whom to send a group event. */
export function groupMemberIds(db: DatabaseSync, groupId: string): string[] {
  return (prepareCached(db, SQL_MEMBER_IDS).all(groupId) as { endpoint_id: string }[])
    .map((r) => r.endpoint_id);
}
