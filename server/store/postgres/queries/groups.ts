import { type GroupPage, type GroupSummary, MAX_GROUP_PAGE_LIMIT } from "../../queries/groups.ts";
import { OpError } from "../../op_error.ts";
import type { PgReader } from "../op.ts";

// Group reads (spec 6.7 group.list, group.get); the twin of server/store/queries/groups.ts.

const SQL_MY_GROUPS = `SELECT g.id, g.name, g.owner_id,
    (SELECT count(*) FROM group_members c WHERE c.group_id = g.id) AS member_count
  FROM group_members m JOIN groups g ON g.id = m.group_id
  WHERE m.endpoint_id = $1 AND g.id > $2 ORDER BY g.id LIMIT $3`;
const SQL_GROUP = `SELECT g.id, g.name, g.owner_id,
    (SELECT count(*) FROM group_members c WHERE c.group_id = g.id) AS member_count
  FROM groups g WHERE g.id = $1`;
const SQL_IS_MEMBER =
  "SELECT 1 AS found FROM group_members WHERE group_id = $1 AND endpoint_id = $2";
const SQL_MEMBERS_PAGE = `SELECT m.endpoint_id AS id, coalesce(e.name, '') AS name
  FROM group_members m LEFT JOIN endpoints e ON e.id = m.endpoint_id
  WHERE m.group_id = $1 AND m.endpoint_id > $2 ORDER BY m.endpoint_id LIMIT $3`;

function pageSize(limit: number): number {
  return Math.max(1, Math.min(MAX_GROUP_PAGE_LIMIT, Math.trunc(limit) || 1));
}

/** `group.list`: the groups `endpointId` belongs to, by id after `cursor`. */
export async function listMyGroups(
  r: PgReader,
  endpointId: string,
  cursor: string,
  limit: number,
): Promise<{ items: GroupSummary[]; next_cursor: string }> {
  const size = pageSize(limit);
  const rows = await r.q<GroupSummary>(SQL_MY_GROUPS, [endpointId, cursor, size + 1]);
  const items = rows.slice(0, size).map((g) => ({
    id: g.id,
    name: g.name,
    owner_id: g.owner_id,
    member_count: g.member_count,
  }));
  return { items, next_cursor: rows.length > size ? items[items.length - 1].id : "" };
}

/** `group.get` without `online`. @throws {OpError} `not_found`, `not_member`. */
export async function groupPage(
  r: PgReader,
  callerId: string,
  groupId: string,
  cursor: string,
  limit: number,
): Promise<GroupPage> {
  const g = (await r.q<GroupSummary>(SQL_GROUP, [groupId]))[0];
  if (g === undefined) throw new OpError("not_found");
  if ((await r.q(SQL_IS_MEMBER, [groupId, callerId])).length === 0) {
    throw new OpError("not_member");
  }
  const size = pageSize(limit);
  const rows = await r.q<{ id: string; name: string }>(SQL_MEMBERS_PAGE, [
    groupId,
    cursor,
    size + 1,
  ]);
  const items = rows.slice(0, size);
  return {
    id: g.id,
    name: g.name,
    owner_id: g.owner_id,
    member_count: g.member_count,
    members: items.map((m) => ({ id: m.id, name: m.name })),
    next_cursor: rows.length > size ? items[items.length - 1].id : "",
  };
}
