/** Parsers of the group requests of spec 6.7, one function per frame type. */
import { badField, Fields, type FrameFields, isPlainObject, readPaging } from "./fields.ts";
import type { GroupMemberInput } from "./frames.ts";
import { MAX_NAME_CHARS, MAX_TALK_PASSWORD_CHARS, type ProtocolLimits } from "./limits.ts";

/**
 * spec 6.7: `id` "" or absent lets the server choose; `members` longer than
 * `max_group_members` is `group_full` (the app also counts the creator).
 */
export function parseGroupCreate(f: Fields, limits: ProtocolLimits): FrameFields<"group.create"> {
  return {
    id: f.optId("id"),
    name: f.optString("name", { max: MAX_NAME_CHARS }) ?? "",
    members: readMembers(f, limits),
  };
}

/** spec 6.7: the app checks the group's size after adding; this only bounds the list. */
export function parseGroupAdd(f: Fields, limits: ProtocolLimits): FrameFields<"group.add"> {
  return { group_id: f.id("group_id"), members: readMembers(f, limits) };
}

/** spec 6.7 */
export function parseGroupMember(f: Fields): FrameFields<"group.remove" | "group.transfer"> {
  return { group_id: f.id("group_id"), endpoint_id: f.id("endpoint_id") };
}

/** spec 6.7: leave and dissolve name only the group. */
export function parseGroupId(f: Fields): FrameFields<"group.leave" | "group.dissolve"> {
  return { group_id: f.id("group_id") };
}

/** spec 6.7 */
export function parseGroupRename(f: Fields): FrameFields<"group.rename"> {
  return { group_id: f.id("group_id"), name: f.string("name", { max: MAX_NAME_CHARS }) };
}

/** spec 6.7: paged, `limit` at most 200. */
export function parseGroupList(f: Fields): FrameFields<"group.list"> {
  return readPaging(f);
}

/** spec 6.7: paged members of one group. */
export function parseGroupGet(f: Fields): FrameFields<"group.get"> {
  return { group_id: f.id("group_id"), ...readPaging(f) };
}

function readMembers(f: Fields, limits: ProtocolLimits): GroupMemberInput[] {
  return f.array("members", limits.max_group_members, memberItem, "group_full");
}

function memberItem(value: unknown, path: string): GroupMemberInput {
  if (!isPlainObject(value)) throw badField(path, "必须是对象");
  const m = new Fields(value, path);
  const password = m.optString("talk_password", { max: MAX_TALK_PASSWORD_CHARS });
  return { id: m.id("id"), talk_password: password === "" ? null : password };
}
