import type { RevokeReason } from "../../../protocol/frames.ts";
import type {
  DeleteEndpointResult,
  EndpointArgs,
  GroupEventNote,
  ResetPasswordArgs,
  Voided,
} from "../../ops/invalidate.ts";
import type { MessageRow } from "../../ops/receipts.ts";
import { closing } from "../../ops/invalidate.ts";
import { OpError } from "../../op_error.ts";
import type { PgTx } from "../op.ts";
import { completeEarly, finalize, messageBySeq, noteReceipt } from "./receipts.ts";

// The invalidation table of spec 7.6 (作废); the twin of server/store/ops/invalidate.ts.

const RETURNING = "RETURNING seq, endpoint_id, pushed_conn";
const SQL_REJECT_TO = `UPDATE deliveries SET state = 'rejected', reason = $1, updated_at = $2
  WHERE endpoint_id = $3 AND state = 'pending' ${RETURNING}`;
const SQL_REJECT_FROM = `UPDATE deliveries SET state = 'rejected', reason = $1, updated_at = $2
  WHERE state = 'pending' AND seq IN
    (SELECT seq FROM messages WHERE sender_id = $3 AND state = 'dispatched') ${RETURNING}`;
const SQL_REJECT_GROUP = `UPDATE deliveries SET state = 'rejected', reason = $1, updated_at = $2
  WHERE state = 'pending' AND seq IN (SELECT seq FROM messages
    WHERE dest_kind = 'group' AND dest_id = $3 AND state = 'dispatched') ${RETURNING}`;
const SQL_REJECT_GROUP_MEMBER = `UPDATE deliveries SET state = 'rejected', reason = $1,
  updated_at = $2 WHERE state = 'pending' AND endpoint_id = $3 AND seq IN (SELECT seq FROM messages
    WHERE dest_kind = 'group' AND dest_id = $4 AND state = 'dispatched') ${RETURNING}`;
const SQL_SCHEDULED_TO = `SELECT seq FROM messages
  WHERE dest_kind = $1 AND dest_id = $2 AND state = 'scheduled' ORDER BY seq`;
const SQL_SCHEDULED_FROM =
  "SELECT seq FROM messages WHERE sender_id = $1 AND state = 'scheduled' ORDER BY seq";
const SQL_ENDPOINT = "SELECT enabled FROM endpoints WHERE id = $1";
const SQL_DISABLE = `UPDATE endpoints SET enabled = 0, session_hash = NULL,
  session_issued_at = NULL, session_used_at = NULL, ${closing("disabled")} WHERE id = $1`;
const SQL_ENABLE = "UPDATE endpoints SET enabled = 1 WHERE id = $1 AND enabled = 0";
const SQL_RESET_LOGIN = `UPDATE endpoints SET login_hash = $1, session_hash = NULL,
  session_issued_at = NULL, session_used_at = NULL, ${closing("password_reset")} WHERE id = $2`;
const SQL_KICK = `UPDATE endpoints SET ${closing("kick")} WHERE id = $1
  RETURNING closed_through`;
const SQL_MEMBER_IDS =
  "SELECT endpoint_id FROM group_members WHERE group_id = $1 ORDER BY endpoint_id";
const SQL_GROUPS_OF = `SELECT g.id, g.owner_id FROM group_members m
  JOIN groups g ON g.id = m.group_id WHERE m.endpoint_id = $1 ORDER BY g.id`;
const SQL_SUCCESSOR = `SELECT endpoint_id FROM group_members WHERE group_id = $1
  ORDER BY joined_at, endpoint_id LIMIT 1`;
const SQL_SET_OWNER = "UPDATE groups SET owner_id = $1 WHERE id = $2";
const SQL_DELETE_MEMBER = "DELETE FROM group_members WHERE group_id = $1 AND endpoint_id = $2";
const SQL_DELETE_MEMBERS = "DELETE FROM group_members WHERE group_id = $1";
const SQL_DELETE_GROUP = "DELETE FROM groups WHERE id = $1";
const SQL_DELETE_GRANTS = "DELETE FROM talk_grants WHERE sender_id = $1 OR target_id = $1";
const SQL_DELETE_RECEIPTS = "DELETE FROM receipts WHERE sender_id = $1 AND acked = 0";
const SQL_DELETE_SEND_KEYS = "DELETE FROM send_keys WHERE sender_id = $1";
// Bodies and deliveries go with their messages (ON DELETE CASCADE).
const SQL_DELETE_SENT = "DELETE FROM messages WHERE sender_id = $1";
const SQL_DELETE_ENDPOINT = "DELETE FROM endpoints WHERE id = $1";

interface VoidedRow {
  seq: number;
  endpoint_id: string;
  pushed_conn: string | null;
}

/** A fresh, empty {@link Voided}. */
export function noneVoided(): Voided {
  return { revoked: [], receipts: [] };
}

/** RETURNING has no order; the SQLite ops see rows in (seq, endpoint_id) order. */
function inOrder(rows: readonly VoidedRow[]): VoidedRow[] {
  return [...rows].sort((a, b) =>
    a.seq - b.seq || (a.endpoint_id < b.endpoint_id ? -1 : a.endpoint_id > b.endpoint_id ? 1 : 0)
  );
}

async function settleRejected(
  t: PgTx,
  rows: readonly VoidedRow[],
  reason: RevokeReason,
  withReceipts: boolean,
  now: number,
  out: Voided,
): Promise<void> {
  const messages = new Map<number, MessageRow | undefined>();
  for (const r of inOrder(rows)) {
    if (!messages.has(r.seq)) messages.set(r.seq, await messageBySeq(t, r.seq));
    const msg = messages.get(r.seq);
    if (msg === undefined) continue;
    if (r.pushed_conn !== null) {
      out.revoked.push({
        endpointId: r.endpoint_id,
        connCode: r.pushed_conn,
        msgId: msg.id,
        from: msg.sender_id,
        reason,
      });
    }
    if (withReceipts) {
      await noteReceipt(t, out.receipts, msg, r.endpoint_id, "rejected", reason, now);
    }
  }
  for (const seq of messages.keys()) await finalize(t, seq);
}

async function completeScheduled(
  t: PgTx,
  seqs: readonly { seq: number }[],
  reason: string,
  receiptFor: string | null,
  now: number,
  out: Voided,
): Promise<void> {
  for (const { seq } of seqs) {
    const msg = await messageBySeq(t, seq);
    if (msg === undefined || !(await completeEarly(t, seq, reason))) continue;
    if (receiptFor !== null) {
      await noteReceipt(t, out.receipts, msg, receiptFor, "rejected", reason, now);
    }
  }
}

/** The members of a group, by endpoint id. */
export async function memberIds(t: PgTx, groupId: string): Promise<string[]> {
  return (await t.q<{ endpoint_id: string }>(SQL_MEMBER_IDS, [groupId])).map((r) => r.endpoint_id);
}

/** spec 7.6 成员退群或被踢: the member's pending group deliveries become rejected (left_group). */
export async function voidMembership(
  t: PgTx,
  groupId: string,
  endpointId: string,
  now: number,
  out: Voided,
): Promise<void> {
  const rows = await t.q<VoidedRow>(SQL_REJECT_GROUP_MEMBER, [
    "left_group",
    now,
    endpointId,
    groupId,
  ]);
  await settleRejected(t, rows, "left_group", true, now, out);
  await t.q(SQL_DELETE_MEMBER, [groupId, endpointId]);
}

/** spec 7.6 解散群. */
export async function voidGroup(t: PgTx, groupId: string, now: number, out: Voided): Promise<void> {
  const reason = "group_dissolved";
  const rows = await t.q<VoidedRow>(SQL_REJECT_GROUP, [reason, now, groupId]);
  await settleRejected(t, rows, reason, true, now, out);
  const scheduled = await t.q<{ seq: number }>(SQL_SCHEDULED_TO, ["group", groupId]);
  await completeScheduled(t, scheduled, reason, "", now, out);
  await t.q(SQL_DELETE_MEMBERS, [groupId]);
  await t.q(SQL_DELETE_GROUP, [groupId]);
}

async function voidEndpoint(
  t: PgTx,
  id: string,
  kind: "disabled" | "deleted",
  now: number,
): Promise<Voided> {
  const out = noneVoided();
  const toReason: RevokeReason = `endpoint_${kind}`;
  const fromReason: RevokeReason = `sender_${kind}`;
  const to = await t.q<VoidedRow>(SQL_REJECT_TO, [toReason, now, id]);
  await settleRejected(t, to, toReason, true, now, out);
  const direct = await t.q<{ seq: number }>(SQL_SCHEDULED_TO, ["endpoint", id]);
  await completeScheduled(t, direct, toReason, id, now, out);
  const own = await t.q<{ seq: number }>(SQL_SCHEDULED_FROM, [id]);
  await completeScheduled(t, own, fromReason, null, now, out);
  const from = await t.q<VoidedRow>(SQL_REJECT_FROM, [fromReason, now, id]);
  await settleRejected(t, from, fromReason, false, now, out);
  return out;
}

async function requireEndpoint(t: PgTx, id: string): Promise<{ enabled: number }> {
  const row = (await t.q<{ enabled: number }>(SQL_ENDPOINT, [id]))[0];
  if (row === undefined) throw new OpError("not_found");
  return row;
}

/** `endpoint.disable` (spec 7.6 停用端 X, spec 8). @throws {OpError} `not_found`. */
export async function disableEndpoint(
  t: PgTx,
  args: EndpointArgs,
  now: number,
): Promise<Voided & { changed: boolean }> {
  const row = await requireEndpoint(t, args.endpointId);
  await t.q(SQL_DISABLE, [args.endpointId]);
  return {
    changed: row.enabled === 1,
    ...(await voidEndpoint(t, args.endpointId, "disabled", now)),
  };
}

/** `endpoint.enable` (spec 8). @throws {OpError} `not_found`. */
export async function enableEndpoint(
  t: PgTx,
  args: EndpointArgs,
  _now: number,
): Promise<{ changed: boolean }> {
  await requireEndpoint(t, args.endpointId);
  return { changed: (await t.q(SQL_ENABLE, [args.endpointId])).count > 0 };
}

/** `endpoint.delete` (spec 7.6 删除端 X, spec 8). @throws {OpError} `not_found`. */
export async function deleteEndpoint(
  t: PgTx,
  args: EndpointArgs,
  now: number,
): Promise<DeleteEndpointResult> {
  const id = args.endpointId;
  await requireEndpoint(t, id);
  const out = await voidEndpoint(t, id, "deleted", now);
  const groupEvents = await leaveAllGroups(t, id, now, out);
  await t.q(SQL_DELETE_GRANTS, [id]);
  await t.q(SQL_DELETE_RECEIPTS, [id]);
  await t.q(SQL_DELETE_SEND_KEYS, [id]);
  await t.q(SQL_DELETE_SENT, [id]);
  await t.q(SQL_DELETE_ENDPOINT, [id]);
  const receipts = out.receipts.filter((r) => r.senderId !== id);
  return { revoked: out.revoked, receipts, groupEvents };
}

async function leaveAllGroups(
  t: PgTx,
  id: string,
  now: number,
  out: Voided,
): Promise<GroupEventNote[]> {
  const events: GroupEventNote[] = [];
  const groups = await t.q<{ id: string; owner_id: string }>(SQL_GROUPS_OF, [id]);
  for (const g of groups) {
    await t.q(SQL_DELETE_MEMBER, [g.id, id]);
    const left = (members: string[]): GroupEventNote => ({
      groupId: g.id,
      members,
      event: "left",
      endpointId: id,
    });
    if (g.owner_id !== id) {
      events.push(left(await memberIds(t, g.id)));
      continue;
    }
    const next = (await t.q<{ endpoint_id: string }>(SQL_SUCCESSOR, [g.id]))[0];
    if (next === undefined) {
      await voidGroup(t, g.id, now, out);
      events.push({ groupId: g.id, members: [], event: "dissolved", endpointId: id });
      continue;
    }
    await t.q(SQL_SET_OWNER, [next.endpoint_id, g.id]);
    const members = await memberIds(t, g.id);
    events.push(left(members), {
      groupId: g.id,
      members,
      event: "owner_changed",
      endpointId: next.endpoint_id,
    });
  }
  return events;
}

/** `endpoint.reset_password` (spec 8). @throws {OpError} `not_found`. */
export async function resetPassword(
  t: PgTx,
  args: ResetPasswordArgs,
  _now: number,
): Promise<{ changed: boolean }> {
  const r = await t.q(SQL_RESET_LOGIN, [args.loginHash, args.endpointId]);
  if (r.count === 0) throw new OpError("not_found");
  return { changed: true };
}

/** `endpoint.kick` (spec 8, issue 30). @throws {OpError} `not_found`. */
export async function kickEndpoint(
  t: PgTx,
  args: EndpointArgs,
  _now: number,
): Promise<{ closedThrough: number | null }> {
  const rows = await t.q<{ closed_through: number | string | null }>(SQL_KICK, [args.endpointId]);
  if (rows.length === 0) throw new OpError("not_found");
  const v = rows[0].closed_through;
  return { closedThrough: v === null ? null : Number(v) };
}

/** The endpoint invalidation ops. */
export const pgInvalidateOps = {
  "endpoint.disable": disableEndpoint,
  "endpoint.enable": enableEndpoint,
  "endpoint.delete": deleteEndpoint,
  "endpoint.reset_password": resetPassword,
  "endpoint.kick": kickEndpoint,
};
