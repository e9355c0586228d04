/** The group requests of spec 6.7, one method per frame type. */
import { toGroupChange, toGroupDetails, toGroupList } from "./results.ts";
import type { GroupChange, GroupDetails, GroupMemberInput, GroupSummary, Page } from "./types.ts";

/** Sends one request frame and resolves with its `resp.data`. */
export type RequestFn = (
  type: string,
  fields: Record<string, unknown>,
) => Promise<Record<string, unknown>>;

function members(list: readonly (string | GroupMemberInput)[]): Record<string, string>[] {
  return list.map((m) =>
    typeof m === "string"
      ? { id: m, talk_password: "" }
      : { id: m.id, talk_password: m.talkPassword ?? "" }
  );
}

/**
 * Group operations of a connected client (`client.groups`). The caller of `create` becomes the
 * owner and a member; members that cannot be added are listed in `failed` (spec 6.7).
 *
 * @example
 * ```ts
 * const { groupId, failed } = await client.groups.create("Floor 1", [
 *   "door-1",
 *   { id: "door-2", talkPassword: "secret" },
 * ]);
 * await client.send({ kind: "group", id: groupId }, "hello all");
 * ```
 */
export class GroupApi {
  readonly #request: RequestFn;

  constructor(request: RequestFn) {
    this.#request = request;
  }

  /** `group.create`: `id` empty lets the server choose (`g_…`); an existing id is `id_taken`. */
  async create(
    name: string,
    initialMembers: readonly (string | GroupMemberInput)[] = [],
    options: { readonly id?: string } = {},
  ): Promise<GroupChange> {
    const id = options.id ?? "";
    const d = await this.#request("group.create", {
      id,
      name,
      members: members(initialMembers),
    });
    return toGroupChange(d, id);
  }

  /** `group.add`: adds members; the ones that fail are listed with their code. */
  async add(
    groupId: string,
    newMembers: readonly (string | GroupMemberInput)[],
  ): Promise<GroupChange> {
    const d = await this.#request("group.add", {
      group_id: groupId,
      members: members(newMembers),
    });
    return toGroupChange(d, groupId);
  }

  /** `group.remove`: the owner removes a member. */
  async remove(groupId: string, endpointId: string): Promise<void> {
    await this.#request("group.remove", {
      group_id: groupId,
      endpoint_id: endpointId,
    });
  }

  /** `group.leave`: the owner must transfer first (`owner_cannot_leave`). */
  async leave(groupId: string): Promise<void> {
    await this.#request("group.leave", { group_id: groupId });
  }

  /** `group.transfer`: makes another member the owner. */
  async transfer(groupId: string, endpointId: string): Promise<void> {
    await this.#request("group.transfer", {
      group_id: groupId,
      endpoint_id: endpointId,
    });
  }

  /** `group.rename`. */
  async rename(groupId: string, name: string): Promise<void> {
    await this.#request("group.rename", { group_id: groupId, name });
  }

  /** `group.dissolve`: pending group messages are rejected with `group_dissolved`. */
  async dissolve(groupId: string): Promise<void> {
    await this.#request("group.dissolve", { group_id: groupId });
  }

  /** `group.list`: the groups this endpoint is a member of, one page at a time. */
  async list(cursor = "", limit = 100): Promise<Page<GroupSummary>> {
    return toGroupList(await this.#request("group.list", { cursor, limit }));
  }

  /** `group.get`: the group and one page of its members; non-members get `not_member`. */
  async get(groupId: string, cursor = "", limit = 100): Promise<GroupDetails> {
    return toGroupDetails(await this.#request("group.get", { group_id: groupId, cursor, limit }));
  }
}
