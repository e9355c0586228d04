import type { Handler, HandlerTable, RequestCtx } from "../mqtt_app.ts";
import type { App } from "../app_context.ts";
import { encodeFrame } from "../../protocol/mod.ts";
import type { GroupEventKind, GroupMemberInput } from "../../protocol/frames.ts";
import type { MemberInput } from "../../store/ops/groups.ts";
import type { GroupChange } from "../../store/ops/groups.ts";
import { withMembersOnline } from "../../store/queries/groups.ts";
import { randomId } from "../../auth/generate.ts";
import { OpError } from "../../store/op_error.ts";

/**
 * Sends one `group_event` (QoS 0, not stored, spec 6.7) to the online ones among `members`.
 * Shared by the MQTT group frames and the admin API.
 */
export function notifyGroup(
  app: App,
  members: readonly string[],
  groupId: string,
  event: GroupEventKind,
  endpointId: string,
): void {
  const bytes = encodeFrame({
    v: 1,
    type: "group_event",
    group_id: groupId,
    event,
    endpoint_id: endpointId,
    at_ms: app.clock(),
  });
  const elsewhere: string[] = [];
  for (const id of new Set(members)) {
    const conn = app.conns.current(id);
    if (conn?.handshaken && !conn.closed) app.broker.post(conn.code, bytes, 0);
    else if (conn === undefined) elsewhere.push(id);
  }
  // issue 30: members connected to other nodes get it from there.
  app.remoteFrames?.(elsewhere, bytes);
}

/** Applies a committed membership change: revoked frames, receipts, the event (spec 7.6). */
export function applyGroupChange(app: App, groupId: string, ch: GroupChange): void {
  app.messaging.apply({ receipts: ch.receipts, revoked: ch.revoked });
  notifyGroup(app, ch.members, groupId, ch.event.event, ch.event.endpointId);
}

/**
 * Turns invited members into op inputs: a member with a talk password needs the caller's valid
 * grant or the right password (argon2 here, on the main thread). A locked target fails that
 * member with `rate_limited` (spec 5 锁定).
 */
async function memberInputs(
  app: App,
  callerId: string,
  members: readonly GroupMemberInput[],
): Promise<{ inputs: MemberInput[]; failed: { id: string; code: string }[] }> {
  const inputs: MemberInput[] = [];
  const failed: { id: string; code: string }[] = [];
  for (const m of members) {
    const st = await app.store.query("talk.grant_state", { senderId: callerId, targetId: m.id });
    if (!st.found || !st.needsPassword) {
      inputs.push({ id: m.id, verdict: "ok" });
      continue;
    }
    if (!m.talk_password) {
      inputs.push({ id: m.id, verdict: "talk_password_required" });
      continue;
    }
    const attempt = await app.talkLocks.acquire(callerId, m.id);
    if (attempt === null) {
      failed.push({ id: m.id, code: "rate_limited" });
      continue;
    }
    if (st.talkHash !== null && await app.pool.verify(st.talkHash, m.talk_password)) {
      attempt.release();
      inputs.push({ id: m.id, verdict: "ok", talkVersion: st.talkVersion });
    } else {
      attempt.fail("wrong_password");
      await attempt.done();
      inputs.push({ id: m.id, verdict: "talk_password_invalid" });
    }
  }
  return { inputs, failed };
}

/** Frames published between two yields to the event loop while announcing new members. */
const EVENTS_PER_TURN = 5000;

/**
 * One `member_added` per new member to every online member (spec 6.7). Adding N members to an
 * online group of M is N x M frames, so this yields to the event loop first (the `resp` goes out
 * before the events) and then after about EVENTS_PER_TURN frames. In one synchronous loop,
 * adding 1,000 members to an online group of 1,001 blocked the event loop for 9-27 s (another
 * client's request waited 9-11 s) and queued 1.2 GB of writes. Runs on its own: the events are
 * best effort (QoS 0) and do not depend on the caller's connection.
 */
export function announceAdded(
  app: App,
  groupId: string,
  members: readonly string[],
  added: readonly string[],
): void {
  if (added.length === 0) return;
  (async () => {
    let sinceYield = EVENTS_PER_TURN;
    for (const id of added) {
      if (sinceYield >= EVENTS_PER_TURN) {
        sinceYield = 0;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      notifyGroup(app, members, groupId, "member_added", id);
      sinceYield += members.length;
    }
  })().catch((err) => app.log.error("group event failed", { error: (err as Error).message }));
}

/** spec 6.7 group.create: optional id (else `g_xxxxxxxx`); partial member failures listed. */
const create: Handler<"group.create"> = async ({ app, conn }, frame) => {
  const { inputs, failed } = await memberInputs(app, conn.endpointId, frame.members);
  for (let attempt = 0;; attempt++) {
    const groupId = frame.id ?? randomId("g", 8);
    try {
      const r = await app.store.run("group.create", {
        ownerId: conn.endpointId,
        groupId,
        name: frame.name,
        members: inputs,
        maxMembers: app.config.limits.max_group_members,
      });
      announceAdded(app, r.groupId, r.members, r.added);
      return { group_id: r.groupId, added: r.added, failed: [...failed, ...r.failed] };
    } catch (err) {
      // A generated id that collides is retried; a chosen one is the caller's `id_taken`.
      if (frame.id || !(err instanceof OpError) || err.code !== "id_taken" || attempt >= 3) {
        throw err;
      }
    }
  }
};

/** spec 6.7 group.add: members join unless their talk password or state refuses them. */
const add: Handler<"group.add"> = async ({ app, conn }, frame) => {
  const { inputs, failed } = await memberInputs(app, conn.endpointId, frame.members);
  const r = await app.store.run("group.add", {
    callerId: conn.endpointId,
    groupId: frame.group_id,
    members: inputs,
    maxMembers: app.config.limits.max_group_members,
  });
  announceAdded(app, frame.group_id, r.members, r.added);
  return { group_id: frame.group_id, added: r.added, failed: [...failed, ...r.failed] };
};

async function change(
  { app }: RequestCtx,
  groupId: string,
  run: () => Promise<GroupChange>,
): Promise<Record<string, never>> {
  applyGroupChange(app, groupId, await run());
  return {};
}

const remove: Handler<"group.remove"> = (ctx, f) =>
  change(ctx, f.group_id, () =>
    ctx.app.store.run("group.remove", {
      callerId: ctx.conn.endpointId,
      groupId: f.group_id,
      endpointId: f.endpoint_id,
    }));

const leave: Handler<"group.leave"> = (ctx, f) =>
  change(
    ctx,
    f.group_id,
    () => ctx.app.store.run("group.leave", { callerId: ctx.conn.endpointId, groupId: f.group_id }),
  );

const transfer: Handler<"group.transfer"> = (ctx, f) =>
  change(ctx, f.group_id, () =>
    ctx.app.store.run("group.transfer", {
      callerId: ctx.conn.endpointId,
      groupId: f.group_id,
      endpointId: f.endpoint_id,
    }));

const rename: Handler<"group.rename"> = (ctx, f) =>
  change(ctx, f.group_id, () =>
    ctx.app.store.run("group.rename", {
      callerId: ctx.conn.endpointId,
      groupId: f.group_id,
      name: f.name,
    }));

const dissolve: Handler<"group.dissolve"> = (ctx, f) =>
  change(
    ctx,
    f.group_id,
    () =>
      ctx.app.store.run("group.dissolve", { callerId: ctx.conn.endpointId, groupId: f.group_id }),
  );

/** spec 6.7 group.list: my groups, paged by id. */
const list: Handler<"group.list"> = ({ app, conn }, f) =>
  app.store.query("group.list_mine", {
    endpointId: conn.endpointId,
    cursor: f.cursor,
    limit: f.limit,
  });

/** spec 6.7 group.get: group info and paged members; non-members get `not_member`. */
const get: Handler<"group.get"> = async ({ app, conn }, f) => {
  const g = await app.store.query("group.get", {
    callerId: conn.endpointId,
    groupId: f.group_id,
    cursor: f.cursor,
    limit: f.limit,
  });
  return withMembersOnline(g, await app.presence.onlineAmong(g.members.map((m) => m.id)));
};

/** The group frames of spec 6.7. */
export const groupHandlers: HandlerTable = {
  "group.create": create,
  "group.add": add,
  "group.remove": remove,
  "group.leave": leave,
  "group.transfer": transfer,
  "group.rename": rename,
  "group.dissolve": dissolve,
  "group.list": list,
  "group.get": get,
};
