/**
 * Groups from the admin API (spec 8): the admin acts as the owner and needs no talk passwords
 * (the group ops' `admin: true`). Invalidations and group events follow spec 6.7 and 7.6.
 */
import { randomId } from "../auth/generate.ts";
import { isValidId } from "../protocol/mod.ts";
import { OpError } from "../store/op_error.ts";
import type { GroupChange, MemberInput } from "../store/ops/groups.ts";
import type { GroupFilter } from "../store/queries/admin_records.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { announceAdded, applyGroupChange } from "./effects.ts";
import { groupView, isOnline } from "./views.ts";
import {
  bad,
  httpFail,
  ok,
  opFailure,
  optString,
  pageOf,
  pageQuery,
  queryText,
  readJson,
  reqIdList,
  reqString,
} from "./request.ts";

const NAME_RULE = { min: 1, max: 64 };
const MESSAGES = {
  not_found: "群不存在",
  forbidden: "群主不能被移除，先转让",
  not_member: "不是群成员",
} as const;

/** The group handlers. */
export function groupHandlers(d: AdminDeps) {
  const { app } = d;
  const writer = app.store;
  const maxMembers = () => app.config.limits.max_group_members;

  const item = async (id: string) => {
    const g = await app.store.query("admin.group_record", { id });
    if (g === null) throw httpFail("not_found", MESSAGES.not_found);
    return groupView(g);
  };

  const publish = (groupId: string, change: GroupChange) => applyGroupChange(app, groupId, change);
  const added = (groupId: string, members: string[], ids: string[]) =>
    announceAdded(app, groupId, members, ids);

  const asMembers = (ids: string[]): MemberInput[] => ids.map((id) => ({ id, verdict: "ok" }));

  /** GET /api/admin/groups: `q`, `member`; ordered by id; with `total`. */
  async function list(req: AdminRequest): Promise<void> {
    const url = req.ctx.url;
    const { cursor, limit } = pageQuery(url);
    const filter: GroupFilter = {
      q: queryText(url, "q", 64),
      member: queryText(url, "member", 64),
    };
    const rows = await app.store.query("admin.groups_list", {
      filter,
      afterId: cursor,
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (g) => g.id);
    const total = await app.store.query("admin.groups_count", { filter });
    ok(req.ctx, {
      items: page.items.map(groupView),
      next_cursor: page.next,
      total,
    });
  }

  /** POST /api/admin/groups: `owner_id` becomes the owner; failed members are listed. */
  async function create(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["id", "name", "owner_id", "members"]);
    const given = optString(body, "id", { max: 64 }) ?? "";
    if (given !== "" && !isValidId(given)) throw bad("字段不合法：id");
    const name = reqString(body, "name", NAME_RULE);
    const ownerId = reqString(body, "owner_id", { min: 1, max: 64 });
    const members =
      body.members === undefined || (Array.isArray(body.members) && body.members.length === 0)
        ? []
        : reqIdList(body, "members", maxMembers(), isValidId);
    const run = (groupId: string) =>
      writer.run("group.create", {
        ownerId,
        groupId,
        name,
        members: asMembers(members.filter((m) => m !== ownerId)),
        maxMembers: maxMembers(),
        admin: true,
      });
    req.object = given;
    let r;
    for (let attempt = 0;; attempt++) {
      try {
        r = await run(given || randomId("g", 8));
        break;
      } catch (err) {
        // A generated id that collides is retried; a chosen one is the caller's `id_taken`.
        const retry = given === "" && err instanceof OpError && err.code === "id_taken" &&
          attempt < 3;
        if (!retry) {
          opFailure(err, { not_found: "群主端不存在", endpoint_disabled: "群主端已停用" });
        }
      }
    }
    const groupId = r.groupId;
    req.object = groupId;
    // As for the MQTT group.create (spec 6.7): each new member is announced to the members.
    added(groupId, r.members, r.added);
    ok(req.ctx, { item: await item(groupId), failed: r.failed });
  }

  /** GET /api/admin/groups/{id}: the group and a page of its members. */
  async function get(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    const group = await item(id);
    const { cursor, limit } = pageQuery(req.ctx.url);
    const members = await app.store.query("admin.group_members", {
      groupId: id,
      afterId: cursor,
      limit: limit + 1,
    });
    const page = pageOf(members, limit, (m) => m.id);
    const online = app.presence === undefined || app.presence === null
      ? (id: string) => isOnline(app, id)
      : await app.presence.onlineAmong(page.items.map((m) => m.id));
    ok(req.ctx, {
      item: group,
      items: page.items.map((m) => ({
        id: m.id,
        name: m.name,
        online: online(m.id),
        joined_at: m.joined_at,
      })),
      next_cursor: page.next,
    });
  }

  /** PATCH /api/admin/groups/{id}: rename. */
  async function rename(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["name"]);
    const name = reqString(body, "name", NAME_RULE);
    const groupId = req.ctx.params.id;
    const change = await writer.run("group.rename", { callerId: "", groupId, name, admin: true })
      .catch((err) => opFailure(err, MESSAGES));
    publish(groupId, change);
    ok(req.ctx, { item: await item(groupId) });
  }

  /** DELETE /api/admin/groups/{id}: dissolve (spec 7.6 解散群). */
  async function dissolve(req: AdminRequest): Promise<void> {
    const groupId = req.ctx.params.id;
    const change = await writer.run("group.dissolve", { callerId: "", groupId, admin: true })
      .catch((err) => opFailure(err, MESSAGES));
    publish(groupId, change);
    ok(req.ctx, {});
  }

  /** POST /api/admin/groups/{id}/members: no talk password needed (spec 8). */
  async function add(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["members"]);
    const ids = reqIdList(body, "members", 1000, isValidId);
    const groupId = req.ctx.params.id;
    const r = await writer.run("group.add", {
      callerId: "",
      groupId,
      members: asMembers(ids),
      maxMembers: maxMembers(),
      admin: true,
    }).catch((err) => opFailure(err, MESSAGES));
    added(groupId, r.members, r.added);
    ok(req.ctx, { added: r.added, failed: r.failed });
  }

  /** DELETE /api/admin/groups/{id}/members/{endpointId} (spec 7.6 被踢). */
  async function removeMember(req: AdminRequest): Promise<void> {
    const groupId = req.ctx.params.id;
    const endpointId = req.ctx.params.endpointId;
    req.object = `${groupId}/${endpointId}`;
    const change = await writer.run("group.remove", {
      callerId: "",
      groupId,
      endpointId,
      admin: true,
    }).catch((err) => opFailure(err, MESSAGES));
    publish(groupId, change);
    ok(req.ctx, {});
  }

  /** POST /api/admin/groups/{id}/transfer: a member becomes the owner. */
  async function transfer(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["endpoint_id"]);
    const endpointId = reqString(body, "endpoint_id", { min: 1, max: 64 });
    const groupId = req.ctx.params.id;
    const change = await writer.run("group.transfer", {
      callerId: "",
      groupId,
      endpointId,
      admin: true,
    }).catch((err) => opFailure(err, MESSAGES));
    publish(groupId, change);
    ok(req.ctx, { item: await item(groupId) });
  }

  return { list, create, get, rename, dissolve, add, removeMember, transfer };
}
