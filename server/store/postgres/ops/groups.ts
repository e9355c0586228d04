import type {
  AddMembersArgs,
  AddMembersResult,
  CreateGroupArgs,
  DissolveGroupArgs,
  GroupChange,
  GroupMemberArgs,
  LeaveGroupArgs,
  MemberFailure,
  MemberInput,
  RenameGroupArgs,
} from "../../ops/groups.ts";
import type { GroupEventKind } from "../../ops/invalidate.ts";
import { OpError } from "../../op_error.ts";
import type { PgTx } from "../op.ts";
import { memberIds, noneVoided, voidGroup, voidMembership } from "./invalidate.ts";
import { grantState, upsertGrant } from "./talk.ts";

// Group writes (spec 6.7) with the invalidations of spec 7.6; the twin of
// server/store/ops/groups.ts.

const SQL_GROUP = "SELECT id, name, owner_id FROM groups WHERE id = $1";
// ON CONFLICT: a group id taken by another server meanwhile is id_taken, not an error.
const SQL_INSERT_GROUP = `INSERT INTO groups (id, name, owner_id, created_at)
  VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`;
const SQL_INSERT_MEMBER =
  "INSERT INTO group_members (group_id, endpoint_id, joined_at) VALUES ($1, $2, $3)";
const SQL_IS_MEMBER =
  "SELECT 1 AS found FROM group_members WHERE group_id = $1 AND endpoint_id = $2";
// FOR UPDATE on the group row: two servers adding members at once count one after the other,
// so max_group_members holds.
const SQL_LOCK_GROUP = "SELECT 1 AS found FROM groups WHERE id = $1 FOR UPDATE";
const SQL_MEMBER_COUNT = "SELECT count(*) AS n FROM group_members WHERE group_id = $1";
const SQL_ENDPOINT = "SELECT enabled FROM endpoints WHERE id = $1";
const SQL_SET_OWNER = "UPDATE groups SET owner_id = $1 WHERE id = $2";
const SQL_RENAME = "UPDATE groups SET name = $1 WHERE id = $2";

interface GroupRow {
  id: string;
  name: string;
  owner_id: string;
}

async function isMember(t: PgTx, groupId: string, endpointId: string): Promise<boolean> {
  return (await t.q(SQL_IS_MEMBER, [groupId, endpointId])).length > 0;
}

async function requireGroup(t: PgTx, groupId: string): Promise<GroupRow> {
  const g = (await t.q<GroupRow>(SQL_GROUP, [groupId]))[0];
  if (g === undefined) throw new OpError("not_found");
  return g;
}

async function requireMember(
  t: PgTx,
  groupId: string,
  callerId: string,
  admin = false,
): Promise<GroupRow> {
  const g = await requireGroup(t, groupId);
  if (!admin && !(await isMember(t, groupId, callerId))) throw new OpError("not_member");
  return g;
}

async function requireOwner(
  t: PgTx,
  groupId: string,
  callerId: string,
  admin = false,
): Promise<GroupRow> {
  const g = await requireMember(t, groupId, callerId, admin);
  if (!admin && g.owner_id !== callerId) throw new OpError("forbidden");
  return g;
}

async function refuseMember(
  t: PgTx,
  callerId: string,
  m: MemberInput,
  full: boolean,
  admin: boolean,
  now: number,
): Promise<MemberFailure | null> {
  if (full) return "group_full";
  const row = (await t.q<{ enabled: number }>(SQL_ENDPOINT, [m.id]))[0];
  if (row === undefined) return "invalid_target";
  if (row.enabled !== 1) return "endpoint_disabled";
  if (admin) return null; // spec 8: 后台不要求对话密码
  const st = await grantState(t, callerId, m.id);
  if (!st.needsPassword) return null;
  if (m.verdict !== "ok") return m.verdict;
  if (m.talkVersion === undefined) return "talk_password_required";
  if (m.talkVersion !== st.talkVersion) return "talk_password_invalid";
  await upsertGrant(t, callerId, m.id, "password", st.talkVersion, now);
  return null;
}

async function addMembers(
  t: PgTx,
  groupId: string,
  callerId: string,
  members: MemberInput[],
  maxMembers: number,
  admin: boolean,
  now: number,
): Promise<AddMembersResult> {
  await t.q(SQL_LOCK_GROUP, [groupId]);
  let count = (await t.q<{ n: number }>(SQL_MEMBER_COUNT, [groupId]))[0].n;
  const added: string[] = [];
  const failed: AddMembersResult["failed"] = [];
  const seen = new Set<string>();
  for (const m of members) {
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    if (await isMember(t, groupId, m.id)) continue;
    const code = await refuseMember(t, callerId, m, count >= maxMembers, admin, now);
    if (code !== null) {
      failed.push({ id: m.id, code });
      continue;
    }
    await t.q(SQL_INSERT_MEMBER, [groupId, m.id, now]);
    added.push(m.id);
    count++;
  }
  return { groupId, added, failed, members: await memberIds(t, groupId) };
}

/** `group.create` (spec 6.7). @throws {OpError} `id_taken`, `not_found`, `endpoint_disabled`. */
export async function createGroup(
  t: PgTx,
  args: CreateGroupArgs,
  now: number,
): Promise<AddMembersResult> {
  if ((await t.q(SQL_GROUP, [args.groupId])).length > 0) throw new OpError("id_taken");
  const owner = (await t.q<{ enabled: number }>(SQL_ENDPOINT, [args.ownerId]))[0];
  if (owner === undefined) throw new OpError("not_found");
  if (owner.enabled !== 1) throw new OpError("endpoint_disabled");
  const r = await t.q(SQL_INSERT_GROUP, [args.groupId, args.name, args.ownerId, now]);
  if (r.count === 0) throw new OpError("id_taken");
  await t.q(SQL_INSERT_MEMBER, [args.groupId, args.ownerId, now]);
  const admin = args.admin ?? false;
  return addMembers(t, args.groupId, args.ownerId, args.members, args.maxMembers, admin, now);
}

/** `group.add` (spec 6.7). @throws {OpError} `not_found`, `not_member`. */
export async function addToGroup(
  t: PgTx,
  args: AddMembersArgs,
  now: number,
): Promise<AddMembersResult> {
  const admin = args.admin ?? false;
  await requireMember(t, args.groupId, args.callerId, admin);
  return addMembers(t, args.groupId, args.callerId, args.members, args.maxMembers, admin, now);
}

/** `group.remove` (spec 6.7, 7.6). @throws {OpError} `not_found`, `not_member`, `forbidden`. */
export async function removeFromGroup(
  t: PgTx,
  args: GroupMemberArgs,
  now: number,
): Promise<GroupChange> {
  const g = await requireOwner(t, args.groupId, args.callerId, args.admin);
  if (args.endpointId === g.owner_id) throw new OpError("forbidden");
  if (!(await isMember(t, g.id, args.endpointId))) throw new OpError("not_member");
  return leave(t, g.id, args.endpointId, "member_removed", now);
}

/** `group.leave` (spec 6.7, 7.6). @throws {OpError} `not_found`, `not_member`, `owner_cannot_leave`. */
export async function leaveGroup(
  t: PgTx,
  args: LeaveGroupArgs,
  now: number,
): Promise<GroupChange> {
  const g = await requireMember(t, args.groupId, args.callerId);
  if (g.owner_id === args.callerId) throw new OpError("owner_cannot_leave");
  return leave(t, g.id, args.callerId, "left", now);
}

async function leave(
  t: PgTx,
  groupId: string,
  endpointId: string,
  event: "left" | "member_removed",
  now: number,
): Promise<GroupChange> {
  const out = noneVoided();
  await voidMembership(t, groupId, endpointId, now, out);
  const members = [...(await memberIds(t, groupId)), endpointId].sort();
  return { members, event: { event, endpointId }, ...out };
}

/** `group.transfer` (spec 6.7). @throws {OpError} `not_found`, `not_member`, `forbidden`. */
export async function transferGroup(
  t: PgTx,
  args: GroupMemberArgs,
  _now: number,
): Promise<GroupChange> {
  const g = await requireOwner(t, args.groupId, args.callerId, args.admin);
  if (!(await isMember(t, g.id, args.endpointId))) throw new OpError("not_member");
  await t.q(SQL_SET_OWNER, [args.endpointId, g.id]);
  return unchangedMembers(t, g.id, "owner_changed", args.endpointId);
}

/** `group.rename` (spec 6.7). @throws {OpError} `not_found`, `not_member`, `forbidden`. */
export async function renameGroup(
  t: PgTx,
  args: RenameGroupArgs,
  _now: number,
): Promise<GroupChange> {
  const g = await requireOwner(t, args.groupId, args.callerId, args.admin);
  await t.q(SQL_RENAME, [args.name, g.id]);
  return unchangedMembers(t, g.id, "renamed", args.admin ? "" : args.callerId);
}

async function unchangedMembers(
  t: PgTx,
  groupId: string,
  event: GroupEventKind,
  endpointId: string,
): Promise<GroupChange> {
  return {
    members: await memberIds(t, groupId),
    event: { event, endpointId },
    revoked: [],
    receipts: [],
  };
}

/** `group.dissolve` (spec 6.7, 7.6). @throws {OpError} `not_found`, `not_member`, `forbidden`. */
export async function dissolveGroup(
  t: PgTx,
  args: DissolveGroupArgs,
  now: number,
): Promise<GroupChange> {
  const g = await requireOwner(t, args.groupId, args.callerId, args.admin);
  const members = await memberIds(t, g.id);
  const out = noneVoided();
  await voidGroup(t, g.id, now, out);
  const endpointId = args.admin ? "" : args.callerId;
  return { members, event: { event: "dissolved", endpointId }, ...out };
}

/** The group ops. */
export const pgGroupOps = {
  "group.create": createGroup,
  "group.add": addToGroup,
  "group.remove": removeFromGroup,
  "group.leave": leaveGroup,
  "group.transfer": transferGroup,
  "group.rename": renameGroup,
  "group.dissolve": dissolveGroup,
};
