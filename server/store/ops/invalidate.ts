import type { RevokeReason } from "../../protocol/frames.ts";
import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import {
  completeEarly,
  finalize,
  messageBySeq,
  type MessageRow,
  noteReceipt,
  type ReceiptRow,
} from "./receipts.ts";

// The invalidation table of spec 7.6 (作废): a member leaves or is removed, a group is dissolved,
// an endpoint is disabled or deleted. Each runs inside one write op; deliveries already pushed
// are listed in `revoked` so the main thread can send best-effort `revoked` frames (spec 6.4).
// The group rows live here too because deleting an endpoint leaves and hands over its groups.

/** Why an admin closed an endpoint's connections (column `endpoints.closed_reason`). */
export type CloseReason = "disabled" | "password_reset" | "kick";

/**
 * The SET clause that records an admin close (issue 30, migration 11): every connection whose
 * login revision is at most the endpoint's current `online_since` must close, for `reason`. A
 * cluster node's store poll finds them there when NATS lost the close. A kick does not replace a
 * stronger reason recorded for the same logins (a reset, then a kick: still `password_reset`).
 * The same text runs on SQLite and PostgreSQL (SET reads the row as it was).
 */
export function closing(reason: CloseReason): string {
  const kept = reason === "kick"
    ? `CASE WHEN closed_through IS NOT NULL AND closed_through >= online_since
    AND closed_reason <> 'kick' THEN closed_reason ELSE 'kick' END`
    : `'${reason}'`;
  return `closed_reason = ${kept}, closed_through = online_since`;
}

const RETURNING = "RETURNING seq, endpoint_id, pushed_conn";
const SQL_REJECT_TO = `UPDATE deliveries SET state = 'rejected', reason = ?, updated_at = ?
  WHERE endpoint_id = ? AND state = 'pending' ${RETURNING}`;
const SQL_REJECT_FROM = `UPDATE deliveries SET state = 'rejected', reason = ?, updated_at = ?
  WHERE state = 'pending' AND seq IN
    (SELECT seq FROM messages WHERE sender_id = ? AND state = 'dispatched') ${RETURNING}`;
const SQL_REJECT_GROUP = `UPDATE deliveries SET state = 'rejected', reason = ?, updated_at = ?
  WHERE state = 'pending' AND seq IN (SELECT seq FROM messages
    WHERE dest_kind = 'group' AND dest_id = ? AND state = 'dispatched') ${RETURNING}`;
const SQL_REJECT_GROUP_MEMBER = `UPDATE deliveries SET state = 'rejected', reason = ?,
  updated_at = ? WHERE state = 'pending' AND endpoint_id = ? AND seq IN (SELECT seq FROM messages
    WHERE dest_kind = 'group' AND dest_id = ? AND state = 'dispatched') ${RETURNING}`;
const SQL_SCHEDULED_TO = `SELECT seq FROM messages
  WHERE dest_kind = ? AND dest_id = ? AND state = 'scheduled' ORDER BY seq`;
const SQL_SCHEDULED_FROM =
  "SELECT seq FROM messages WHERE sender_id = ? AND state = 'scheduled' ORDER BY seq";
const SQL_ENDPOINT = "SELECT enabled FROM endpoints WHERE id = ?";
const SQL_DISABLE = `UPDATE endpoints SET enabled = 0, session_hash = NULL,
  session_issued_at = NULL, session_used_at = NULL, ${closing("disabled")} WHERE id = ?`;
const SQL_ENABLE = "UPDATE endpoints SET enabled = 1 WHERE id = ? AND enabled = 0";
const SQL_RESET_LOGIN = `UPDATE endpoints SET login_hash = ?, session_hash = NULL,
  session_issued_at = NULL, session_used_at = NULL, ${closing("password_reset")} WHERE id = ?`;
const SQL_KICK = `UPDATE endpoints SET ${closing("kick")} WHERE id = ?
  RETURNING closed_through`;
const SQL_MEMBER_IDS =
  "SELECT endpoint_id FROM group_members WHERE group_id = ? ORDER BY endpoint_id";
const SQL_GROUPS_OF = `SELECT g.id, g.owner_id FROM group_members m
  JOIN groups g ON g.id = m.group_id WHERE m.endpoint_id = ? ORDER BY g.id`;
const SQL_SUCCESSOR = `SELECT endpoint_id FROM group_members WHERE group_id = ?
  ORDER BY joined_at, endpoint_id LIMIT 1`;
const SQL_SET_OWNER = "UPDATE groups SET owner_id = ? WHERE id = ?";
const SQL_DELETE_MEMBER = "DELETE FROM group_members WHERE group_id = ? AND endpoint_id = ?";
const SQL_DELETE_MEMBERS = "DELETE FROM group_members WHERE group_id = ?";
const SQL_DELETE_GROUP = "DELETE FROM groups WHERE id = ?";
const SQL_DELETE_GRANTS = "DELETE FROM talk_grants WHERE sender_id = ? OR target_id = ?";
const SQL_DELETE_RECEIPTS = "DELETE FROM receipts WHERE sender_id = ? AND acked = 0";
const SQL_DELETE_SEND_KEYS = "DELETE FROM send_keys WHERE sender_id = ?";
const SQL_DELETE_SENT_DELIVERIES =
  "DELETE FROM deliveries WHERE seq IN (SELECT seq FROM messages WHERE sender_id = ?)";
const SQL_DELETE_SENT_BODIES =
  "DELETE FROM message_bodies WHERE seq IN (SELECT seq FROM messages WHERE sender_id = ?)";
const SQL_DELETE_SENT = "DELETE FROM messages WHERE sender_id = ?";
const SQL_DELETE_ENDPOINT = "DELETE FROM endpoints WHERE id = ?";

/** Group events (spec 6.7). */
export type GroupEventKind =
  | "member_added"
  | "member_removed"
  | "left"
  | "owner_changed"
  | "renamed"
  | "dissolved";

/** A pushed, unacked delivery that was just voided: send `revoked` on `connCode` (spec 6.4). */
export interface Revoked {
  endpointId: string;
  connCode: string;
  msgId: string;
  /** The message's sender. */
  from: string;
  reason: RevokeReason;
}

/** The effects of an invalidation the main thread acts on. */
export interface Voided {
  revoked: Revoked[];
  /** Receipts written: push them to their senders. */
  receipts: ReceiptRow[];
}

/** A group event to send to `members` (spec 6.7, QoS 0). */
export interface GroupEventNote {
  groupId: string;
  /** Endpoints to notify. */
  members: string[];
  event: GroupEventKind;
  endpointId: string;
}

interface VoidedRow {
  seq: number;
  endpoint_id: string;
  pushed_conn: string | null;
}

/** A fresh, empty {@link Voided}. */
export function noneVoided(): Voided {
  return { revoked: [], receipts: [] };
}

/**
 * Records what happens after deliveries moved pending -> rejected (`rows` from a RETURNING
 * update): pushed ones become `revoked`, receipts when asked, then each message is finalized.
 */
function settleRejected(
  db: DatabaseSync,
  rows: VoidedRow[],
  reason: RevokeReason,
  withReceipts: boolean,
  now: number,
  out: Voided,
): void {
  const messages = new Map<number, MessageRow | undefined>();
  for (const r of rows) {
    if (!messages.has(r.seq)) messages.set(r.seq, messageBySeq(db, r.seq));
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
    if (withReceipts) noteReceipt(db, out.receipts, msg, r.endpoint_id, "rejected", reason, now);
  }
  for (const seq of messages.keys()) finalize(db, seq);
}

/**
 * Completes scheduled messages early with `reason` (spec 7.1 message-level reasons). With a
 * `receiptFor` (an endpoint id, or "" for message level) a receipt is written when asked for.
 */
function completeScheduled(
  db: DatabaseSync,
  seqs: { seq: number }[],
  reason: string,
  receiptFor: string | null,
  now: number,
  out: Voided,
): void {
  for (const { seq } of seqs) {
    const msg = messageBySeq(db, seq);
    if (msg === undefined || !completeEarly(db, seq, reason)) continue;
    if (receiptFor !== null) {
      noteReceipt(db, out.receipts, msg, receiptFor, "rejected", reason, now);
    }
  }
}

/** The members of a group, by endpoint id. */
export function memberIds(db: DatabaseSync, groupId: string): string[] {
  return (prepareCached(db, SQL_MEMBER_IDS).all(groupId) as { endpoint_id: string }[])
    .map((r) => r.endpoint_id);
}

/**
 * spec 7.6 成员退群或被踢: the member's pending deliveries of this group's messages become
 * `rejected` (`left_group`), with receipts; then removes the membership row.
 */
export function voidMembership(
  db: DatabaseSync,
  groupId: string,
  endpointId: string,
  now: number,
  out: Voided,
): void {
  const rows = prepareCached(db, SQL_REJECT_GROUP_MEMBER)
    .all("left_group", now, endpointId, groupId) as unknown as VoidedRow[];
  settleRejected(db, rows, "left_group", true, now, out);
  prepareCached(db, SQL_DELETE_MEMBER).run(groupId, endpointId);
}

/**
 * spec 7.6 解散群: pending deliveries of the group's messages become `rejected`
 * (`group_dissolved`) with receipts; scheduled messages to the group complete with that reason
 * and a message-level receipt; then the group and its members are deleted.
 */
export function voidGroup(db: DatabaseSync, groupId: string, now: number, out: Voided): void {
  const reason = "group_dissolved";
  const rows = prepareCached(db, SQL_REJECT_GROUP).all(
    reason,
    now,
    groupId,
  ) as unknown as VoidedRow[];
  settleRejected(db, rows, reason, true, now, out);
  const scheduled = prepareCached(db, SQL_SCHEDULED_TO).all("group", groupId) as {
    seq: number;
  }[];
  completeScheduled(db, scheduled, reason, "", now, out);
  prepareCached(db, SQL_DELETE_MEMBERS).run(groupId);
  prepareCached(db, SQL_DELETE_GROUP).run(groupId);
}

/**
 * The 停用 / 删除 rows of spec 7.6 for endpoint `id`, in the table's order: deliveries to it
 * (with receipts), scheduled direct messages to it (with receipts), its scheduled messages and
 * the pending deliveries of its messages (both without receipts).
 */
function voidEndpoint(
  db: DatabaseSync,
  id: string,
  kind: "disabled" | "deleted",
  now: number,
): Voided {
  const out = noneVoided();
  const toReason: RevokeReason = `endpoint_${kind}`;
  const fromReason: RevokeReason = `sender_${kind}`;
  const to = prepareCached(db, SQL_REJECT_TO).all(toReason, now, id) as unknown as VoidedRow[];
  settleRejected(db, to, toReason, true, now, out);
  const direct = prepareCached(db, SQL_SCHEDULED_TO).all("endpoint", id) as { seq: number }[];
  completeScheduled(db, direct, toReason, id, now, out);
  const own = prepareCached(db, SQL_SCHEDULED_FROM).all(id) as { seq: number }[];
  completeScheduled(db, own, fromReason, null, now, out);
  const from = prepareCached(db, SQL_REJECT_FROM).all(
    fromReason,
    now,
    id,
  ) as unknown as VoidedRow[];
  settleRejected(db, from, fromReason, false, now, out);
  return out;
}

function requireEndpoint(db: DatabaseSync, id: string): { enabled: number } {
  const row = prepareCached(db, SQL_ENDPOINT).get(id) as { enabled: number } | undefined;
  if (row === undefined) throw new OpError("not_found");
  return row;
}

/** Args of the endpoint invalidation ops. */
export interface EndpointArgs {
  endpointId: string;
}

/**
 * `endpoint.disable` (spec 7.6 停用端 X, spec 8): enabled = 0, session cleared, and the
 * invalidations of the table. Running it again on a disabled endpoint changes nothing new.
 *
 * @throws {OpError} `not_found`.
 */
export function disableEndpoint(
  db: DatabaseSync,
  args: EndpointArgs,
  now: number,
): Voided & { changed: boolean } {
  const row = requireEndpoint(db, args.endpointId);
  prepareCached(db, SQL_DISABLE).run(args.endpointId);
  return { changed: row.enabled === 1, ...voidEndpoint(db, args.endpointId, "disabled", now) };
}

/**
 * `endpoint.enable` (spec 8). Nothing voided by the disable comes back.
 *
 * @throws {OpError} `not_found`.
 */
export function enableEndpoint(
  db: DatabaseSync,
  args: EndpointArgs,
  _now: number,
): { changed: boolean } {
  requireEndpoint(db, args.endpointId);
  return { changed: Number(prepareCached(db, SQL_ENABLE).run(args.endpointId).changes) > 0 };
}

/** Result of `endpoint.delete`. */
export interface DeleteEndpointResult extends Voided {
  /** Group events to send to the remaining members. */
  groupEvents: GroupEventNote[];
}

/**
 * `endpoint.delete` (spec 7.6 删除端 X, spec 8): the disable invalidations with
 * `endpoint_deleted` / `sender_deleted`; then X leaves every group (a group X owned goes to the
 * member who joined first, or is dissolved when X was alone); then X's grants in both
 * directions, unacked receipts, idempotency keys, sent message records and the endpoint row go.
 *
 * @throws {OpError} `not_found`.
 */
export function deleteEndpoint(
  db: DatabaseSync,
  args: EndpointArgs,
  now: number,
): DeleteEndpointResult {
  const id = args.endpointId;
  requireEndpoint(db, id);
  const out = voidEndpoint(db, id, "deleted", now);
  const groupEvents = leaveAllGroups(db, id, now, out);
  prepareCached(db, SQL_DELETE_GRANTS).run(id, id);
  prepareCached(db, SQL_DELETE_RECEIPTS).run(id);
  prepareCached(db, SQL_DELETE_SEND_KEYS).run(id);
  prepareCached(db, SQL_DELETE_SENT_DELIVERIES).run(id);
  prepareCached(db, SQL_DELETE_SENT_BODIES).run(id);
  prepareCached(db, SQL_DELETE_SENT).run(id);
  prepareCached(db, SQL_DELETE_ENDPOINT).run(id);
  // Receipts addressed to X (its messages to itself) were just deleted with X.
  const receipts = out.receipts.filter((r) => r.senderId !== id);
  return { revoked: out.revoked, receipts, groupEvents };
}

/**
 * X leaves each of its groups. Its pending group deliveries are already rejected
 * (`endpoint_deleted`), so only rows change here. X itself is not notified: it is being deleted.
 */
function leaveAllGroups(
  db: DatabaseSync,
  id: string,
  now: number,
  out: Voided,
): GroupEventNote[] {
  const events: GroupEventNote[] = [];
  const groups = prepareCached(db, SQL_GROUPS_OF).all(id) as { id: string; owner_id: string }[];
  for (const g of groups) {
    prepareCached(db, SQL_DELETE_MEMBER).run(g.id, id);
    const left = (members: string[]): GroupEventNote => ({
      groupId: g.id,
      members,
      event: "left",
      endpointId: id,
    });
    if (g.owner_id !== id) {
      events.push(left(memberIds(db, g.id)));
      continue;
    }
    const next = prepareCached(db, SQL_SUCCESSOR).get(g.id) as { endpoint_id: string } | undefined;
    if (next === undefined) {
      voidGroup(db, g.id, now, out);
      events.push({ groupId: g.id, members: [], event: "dissolved", endpointId: id });
      continue;
    }
    prepareCached(db, SQL_SET_OWNER).run(next.endpoint_id, g.id);
    const members = memberIds(db, g.id);
    events.push(left(members), {
      groupId: g.id,
      members,
      event: "owner_changed",
      endpointId: next.endpoint_id,
    });
  }
  return events;
}

/** Args of `endpoint.reset_password`. */
export interface ResetPasswordArgs {
  endpointId: string;
  /** argon2 hash of the new login password, computed on the main thread. */
  loginHash: string;
}

/**
 * `endpoint.reset_password` (spec 8): new login hash and no session, so the token is dead and
 * the connection gets `fatal` (`password_reset`). Deliveries are untouched.
 *
 * @throws {OpError} `not_found`.
 */
export function resetPassword(
  db: DatabaseSync,
  args: ResetPasswordArgs,
  _now: number,
): { changed: boolean } {
  const r = prepareCached(db, SQL_RESET_LOGIN).run(args.loginHash, args.endpointId);
  if (Number(r.changes) === 0) throw new OpError("not_found");
  return { changed: true };
}

/**
 * `endpoint.kick` (spec 8, issue 30): records a kick of the endpoint's current logins, so that a
 * cluster node holding one of its connections closes it at its next store poll even when the
 * kick's NATS notice was lost. Changes nothing else; the kick itself is the caller's. Answers the
 * login revision recorded (null when the endpoint never logged in).
 *
 * @throws {OpError} `not_found`.
 */
export function kickEndpoint(
  db: DatabaseSync,
  args: EndpointArgs,
  _now: number,
): { closedThrough: number | null } {
  const row = prepareCached(db, SQL_KICK).get(args.endpointId) as
    | { closed_through: number | null }
    | undefined;
  if (row === undefined) throw new OpError("not_found");
  return { closedThrough: row.closed_through };
}

/** The endpoint invalidation ops, for the writer's registry in `mod.ts`. */
export const invalidateOps = {
  "endpoint.disable": disableEndpoint,
  "endpoint.enable": enableEndpoint,
  "endpoint.delete": deleteEndpoint,
  "endpoint.reset_password": resetPassword,
  "endpoint.kick": kickEndpoint,
};
