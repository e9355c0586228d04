import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import { opsContext } from "./context.ts";
import { checkTalk, type TalkVerdict, writeReplyGrant } from "./talk.ts";
import { claimDeliveries, type ClaimedDelivery } from "./deliveries.ts";
import {
  completeEarly,
  countDeliveries,
  finalize,
  messageById,
  messageBySeq,
  type MessageRow,
  type MessageState,
  noteReceipt,
  type ReceiptRow,
} from "./receipts.ts";

// Submit, dispatch and recall of messages (spec 7.3, 7.4, 6.4 / 7.6 撤回).

const SQL_SEND_KEY = "SELECT 1 AS found FROM send_keys WHERE sender_id = ? AND msg_id = ?";
// The send key and the message record under one id, in one statement (spec 7.3 step 2).
const SQL_SEND_KEY_AND_MESSAGE = `SELECT k.request_sha256, k.created_at, m.seq, m.send_at,
  m.state FROM (SELECT 1) LEFT JOIN send_keys k ON k.sender_id = ?1 AND k.msg_id = ?2
  LEFT JOIN messages m ON m.sender_id = ?1 AND m.id = ?2`;
// A direct message's target, read once per submit: validity, talk password and dispatch.
const SQL_TARGET = "SELECT id, enabled, offline_since, talk_hash FROM endpoints WHERE id = ?";
const SQL_GROUP_EXISTS = "SELECT 1 AS found FROM groups WHERE id = ?";
const SQL_IS_MEMBER = "SELECT 1 AS found FROM group_members WHERE group_id = ? AND endpoint_id = ?";
// The quota counts are kept exact by triggers (migration 4, schema_v4.ts): one primary-key read
// instead of a walk of the backlog.
const SQL_QUOTA_COUNT = "SELECT n FROM quota_counts WHERE kind = ? AND id = ?";
const SQL_INSERT_MESSAGE = `INSERT INTO messages (id, sender_id, dest_kind, dest_id, meta,
  content_type, body_enc, send_at, keep, ttl_seconds, receipt, state, reason, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?)`;
const SQL_INSERT_BODY = "INSERT INTO message_bodies (seq, body) VALUES (?, ?)";
const SQL_INSERT_SEND_KEY =
  "INSERT INTO send_keys (sender_id, msg_id, request_sha256, created_at) VALUES (?, ?, ?, ?)";
const SQL_MARK_DISPATCHED =
  "UPDATE messages SET state = 'dispatched' WHERE seq = ? AND state = 'scheduled'";
const SQL_ENDPOINT_RECIPIENT = "SELECT id, enabled, offline_since FROM endpoints WHERE id = ?";
const SQL_GROUP_RECIPIENTS = `SELECT e.id, e.enabled, e.offline_since FROM group_members gm
  JOIN endpoints e ON e.id = gm.endpoint_id
  WHERE gm.group_id = ? AND gm.endpoint_id <> ? ORDER BY gm.endpoint_id`;
const SQL_INSERT_DELIVERY = `INSERT INTO deliveries (seq, endpoint_id, send_at, keep, state,
  reason, expire_at, attempts, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)`;
const SQL_DUE = `SELECT seq FROM messages WHERE state = 'scheduled' AND send_at <= ?
    AND seq NOT IN (SELECT value FROM json_each(?))
  ORDER BY send_at, seq LIMIT ?`;
const SQL_NEXT_DUE = `SELECT min(send_at) AS at FROM messages WHERE state = 'scheduled'
  AND seq NOT IN (SELECT value FROM json_each(?))`;
const SQL_SAVEPOINT_ONE = "SAVEPOINT dispatch_one";
const SQL_RELEASE_ONE = "RELEASE dispatch_one";
const SQL_ROLLBACK_ONE = "ROLLBACK TO dispatch_one";
const SQL_RECALL_PENDING = `UPDATE deliveries SET state = 'recalled', reason = '', updated_at = ?
  WHERE seq = ? AND +state = 'pending' RETURNING endpoint_id, pushed_conn`;

/** Args of `message.submit`; the caller has parsed, sized and fingerprinted the request. */
export interface SubmitArgs {
  senderId: string;
  id: string;
  /** SHA-256 of the normalized request (spec 7.3). */
  fingerprint: Uint8Array;
  toKind: "endpoint" | "group";
  toId: string;
  body: Uint8Array;
  bodyEnc: "utf8" | "base64";
  contentType: string;
  /** Serialized JSON object. */
  meta: string;
  /** Resolved by the caller from send_at_ms / delay_ms / the default delay (spec 6.2). */
  sendAt: number;
  keep: boolean;
  ttlSeconds: number;
  receipt: boolean;
  /**
   * The main thread's talk-password verdict for a direct message (spec 6.2), with the target's
   * talk_version it was reached against (from `grantState`). Absent counts as `no_password`.
   * Without `expectedVersion` a failure is never called stale (no password was verified).
   */
  talk?: { verdict: TalkVerdict; expectedVersion?: number };
  /**
   * A direct message only: also claim for this connection of the target, in the same
   * transaction, what its push window takes (`delivery.claim`), so that an online receiver gets
   * the message without a second writer round trip (issue 33).
   */
  claim?: { connCode: string; limit: number };
}

/** Result of `message.submit`. */
export interface SubmitResult {
  /** Absent only for a duplicate whose record is already deleted. */
  seq?: number;
  sendAt: number;
  state: MessageState;
  duplicate: boolean;
  /** Endpoints that got new pending deliveries: wake their push loops. */
  wake: string[];
  /** Receipts written by this op: push them to their sender. */
  receipts: ReceiptRow[];
  /**
   * With `claim` only: what it marked as pushed to that connection; publish only after the
   * commit. The target is then not in `wake`: its lent push loop takes these.
   */
  claimed?: ClaimedDelivery[];
}

/** What a dispatch did. */
export interface DispatchOutcome {
  state: MessageState;
  wake: string[];
  receipts: ReceiptRow[];
}

/**
 * `message.submit` (spec 7.3), steps 2, 3, 6, 7 and 8 in that order. Talk-password grants
 * (steps 4, 5) slot in between {@link checkSenderQuota} and {@link insertMessage}.
 *
 * @throws {OpError} `conflict`, `invalid_target`, `endpoint_disabled`, `not_member`,
 * `quota_exceeded`.
 */
export function submitMessage(db: DatabaseSync, args: SubmitArgs, now: number): SubmitResult {
  const r = submitOnly(db, args, now);
  if (args.claim === undefined || args.toKind !== "endpoint") return r;
  // After every check and write of the submit: a claim never refuses (unguarded op, batch.ts).
  const { claimed } = claimDeliveries(db, { endpointId: args.toId, ...args.claim }, now);
  return { ...r, wake: r.wake.filter((id) => id !== args.toId), claimed };
}

function submitOnly(db: DatabaseSync, args: SubmitArgs, now: number): SubmitResult {
  const duplicate = findDuplicate(db, args);
  if (duplicate !== null) return duplicate;
  const target = validateTarget(db, args);
  checkSenderQuota(db, args.senderId);
  if (target !== null) {
    // spec 7.3 steps 3-5: talk password or grant, then the reply grant. Group sends skip both.
    const talk = args.talk ?? { verdict: "no_password" as const };
    checkTalk(db, { senderId: args.senderId, targetId: args.toId, ...talk }, now, {
      talkHash: target.talk_hash,
    });
    writeReplyGrant(db, args.senderId, args.toId, now);
  }
  // A direct message due now is written as dispatched at once: its target was checked above in
  // this transaction, so its dispatch cannot end early, and the scheduled -> dispatched update
  // (three index rewrites) is saved (issue 19).
  const direct = target !== null && args.sendAt <= now;
  const msg = insertMessage(db, args, now, direct ? "dispatched" : "scheduled");
  insertSendKey(db, args, now);
  const out: DispatchOutcome = msg.send_at > now
    ? { state: "scheduled", wake: [], receipts: [] }
    : dispatch(db, msg, now, target === null ? undefined : [target]);
  return { seq: msg.seq, sendAt: msg.send_at, duplicate: false, ...out };
}

/**
 * spec 7.3 step 2, before any other check: a repeat with the same fingerprint gets the original
 * answer with the message's current state; a different request under the same id is `conflict`.
 * Returns null for a new message.
 */
export function findDuplicate(db: DatabaseSync, args: SubmitArgs): SubmitResult | null {
  const row = prepareCached(db, SQL_SEND_KEY_AND_MESSAGE).get(args.senderId, args.id) as {
    request_sha256: Uint8Array | null;
    created_at: number | null;
    seq: number | null;
    send_at: number | null;
    state: MessageState | null;
  };
  if (row.request_sha256 === null) {
    // The key outlives its record, never the reverse; a lone record is a different request.
    if (row.seq !== null) throw new OpError("conflict");
    return null;
  }
  if (!sameBytes(row.request_sha256, args.fingerprint)) throw new OpError("conflict");
  const none = { duplicate: true, wake: [], receipts: [] };
  if (row.seq === null) {
    // Record deleted (retention): it completed; the submission time is the best send time known.
    return { sendAt: row.created_at!, state: "completed", ...none };
  }
  return { seq: row.seq, sendAt: row.send_at!, state: row.state!, ...none };
}

/** A direct message's target as `message.submit` reads it. */
interface Target extends Recipient {
  talk_hash: string | null;
}

/**
 * spec 7.3 step 3: the target exists, is enabled, and a group has the sender as a member.
 * Returns a direct message's target row (null for a group), read once for the whole submit.
 */
export function validateTarget(db: DatabaseSync, args: SubmitArgs): Target | null {
  if (args.toKind === "endpoint") {
    const row = prepareCached(db, SQL_TARGET).get(args.toId) as Target | undefined;
    if (row === undefined) throw new OpError("invalid_target");
    if (row.enabled !== 1) throw new OpError("endpoint_disabled");
    return row;
  }
  if (prepareCached(db, SQL_GROUP_EXISTS).get(args.toId) === undefined) {
    throw new OpError("invalid_target");
  }
  if (prepareCached(db, SQL_IS_MEMBER).get(args.toId, args.senderId) === undefined) {
    throw new OpError("not_member");
  }
  return null;
}

/** spec 7.3 step 3: unfinished messages (scheduled or dispatched) below max_pending_per_sender. */
export function checkSenderQuota(db: DatabaseSync, senderId: string): void {
  const max = opsContext.limits.maxPendingPerSender;
  if (max <= 0) return;
  if (quotaCount(db, "sender", senderId) >= max) throw new OpError("quota_exceeded");
}

/**
 * A sender's unfinished messages (scheduled or dispatched) or a receiver's pending deliveries,
 * as the migration 4 triggers count them.
 */
export function quotaCount(db: DatabaseSync, kind: "sender" | "receiver", id: string): number {
  const row = prepareCached(db, SQL_QUOTA_COUNT).get(kind, id) as { n: number } | undefined;
  return row?.n ?? 0;
}

/** spec 7.3 step 6: the message (scheduled) and its body. */
export function insertMessage(
  db: DatabaseSync,
  args: SubmitArgs,
  now: number,
  state: "scheduled" | "dispatched" = "scheduled",
): MessageRow {
  const r = prepareCached(db, SQL_INSERT_MESSAGE).run(
    args.id,
    args.senderId,
    args.toKind,
    args.toId,
    args.meta,
    args.contentType,
    args.bodyEnc,
    args.sendAt,
    args.keep ? 1 : 0,
    args.ttlSeconds,
    args.receipt ? 1 : 0,
    state,
    now,
  );
  const seq = Number(r.lastInsertRowid);
  prepareCached(db, SQL_INSERT_BODY).run(seq, args.body);
  return {
    seq,
    id: args.id,
    sender_id: args.senderId,
    dest_kind: args.toKind,
    dest_id: args.toId,
    send_at: args.sendAt,
    keep: args.keep ? 1 : 0,
    ttl_seconds: args.ttlSeconds,
    receipt: args.receipt ? 1 : 0,
    state,
    reason: "",
  };
}

/** spec 7.3 step 7: the idempotency key. */
export function insertSendKey(db: DatabaseSync, args: SubmitArgs, now: number): void {
  prepareCached(db, SQL_INSERT_SEND_KEY).run(args.senderId, args.id, args.fingerprint, now);
}

interface Recipient {
  id: string;
  enabled: number;
  offline_since: number | null;
}

/**
 * spec 7.4: turns a scheduled message into deliveries, one per recipient, then completes it
 * at once when none of them is pending. Does nothing when the message is no longer scheduled.
 * `known`: the recipients as this transaction already read them (a direct submit's target).
 */
export function dispatch(
  db: DatabaseSync,
  msg: MessageRow,
  now: number,
  known?: Recipient[],
): DispatchOutcome {
  const receipts: ReceiptRow[] = [];
  const recipients = known ?? resolveRecipients(db, msg);
  if (typeof recipients === "string") {
    if (msg.state !== "scheduled") {
      throw new Error(`Dispatch of message ${msg.seq} found ${recipients}`);
    }
    // spec 7.4 step 1 / 6.4: no deliveries, a message-level receipt.
    if (!completeEarly(db, msg.seq, recipients)) return current(db, msg.seq, receipts);
    noteReceipt(db, receipts, msg, "", "rejected", recipients, now);
    return { state: "completed", wake: [], receipts };
  }
  if (
    msg.state === "scheduled" &&
    Number(prepareCached(db, SQL_MARK_DISPATCHED).run(msg.seq).changes) === 0
  ) {
    return current(db, msg.seq, receipts);
  }
  const wake: string[] = [];
  for (const r of recipients) {
    const [state, reason, expireAt] = placeDelivery(db, msg, r, now);
    prepareCached(db, SQL_INSERT_DELIVERY).run(
      msg.seq,
      r.id,
      msg.send_at,
      msg.keep,
      state,
      reason,
      expireAt,
      now,
    );
    if (state === "pending") wake.push(r.id);
    else noteReceipt(db, receipts, msg, r.id, state, reason, now);
  }
  // A pending delivery was just written, so the message cannot have completed: skip the check.
  const done = wake.length === 0 && finalize(db, msg.seq);
  const state: MessageState = done ? "completed" : "dispatched";
  return { state, wake, receipts };
}

function current(db: DatabaseSync, seq: number, receipts: ReceiptRow[]): DispatchOutcome {
  return { state: messageBySeq(db, seq)?.state ?? "completed", wake: [], receipts };
}

/** The recipients at dispatch time, or the message-level reason when there are none. */
function resolveRecipients(db: DatabaseSync, msg: MessageRow): Recipient[] | string {
  if (msg.dest_kind === "endpoint") {
    const row = prepareCached(db, SQL_ENDPOINT_RECIPIENT).get(msg.dest_id) as
      | Recipient
      | undefined;
    // Deleting an endpoint normally completes what was scheduled for it (spec 7.6).
    return row === undefined ? "endpoint_deleted" : [row];
  }
  if (prepareCached(db, SQL_GROUP_EXISTS).get(msg.dest_id) === undefined) {
    return "group_dissolved";
  }
  if (prepareCached(db, SQL_IS_MEMBER).get(msg.dest_id, msg.sender_id) === undefined) {
    return "sender_left";
  }
  const rows = prepareCached(db, SQL_GROUP_RECIPIENTS).all(msg.dest_id, msg.sender_id) as unknown[];
  return rows.length === 0 ? "no_recipients" : rows as Recipient[];
}

type Placement = [
  state: "pending" | "rejected" | "dropped",
  reason: string,
  expireAt: number | null,
];

/** spec 7.4 steps 1-2: the initial state and expiry of one delivery. */
function placeDelivery(db: DatabaseSync, msg: MessageRow, r: Recipient, now: number): Placement {
  const { graceMs, maxPendingPerReceiver: max } = opsContext.limits;
  if (r.enabled !== 1) return ["rejected", "endpoint_disabled", null];
  if (max > 0) {
    if (quotaCount(db, "receiver", r.id) >= max) return ["rejected", "queue_full", null];
  }
  // Retention counts from this dispatch, not from the submission (spec 7.4).
  if (msg.keep === 1) return ["pending", "", now + msg.ttl_seconds * 1000];
  if (opsContext.connected.has(r.id)) return ["pending", "", null];
  // Never online (offline_since NULL) counts as offline beyond the grace period.
  if (r.offline_since !== null && now < r.offline_since + graceMs) {
    return ["pending", "", r.offline_since + graceMs];
  }
  return ["dropped", "offline", null];
}

/** Args of `message.dispatch_due`. */
export interface DispatchDueArgs {
  /** At most this many messages per op; default 64. */
  limit?: number;
  /** Seqs to leave alone this time (they failed recently and wait for their retry). */
  skip?: number[];
}

/** A due message whose dispatch failed; it stays scheduled. */
export interface DispatchFailure {
  seq: number;
  error: string;
}

/** Result of `message.dispatch_due`. */
export interface DispatchDueResult {
  dispatched: number;
  wake: string[];
  receipts: ReceiptRow[];
  /** Messages whose dispatch failed and was rolled back alone; retry them later. */
  failed: DispatchFailure[];
  /**
   * The earliest send_at still scheduled, not counting `skip` and `failed`; at or before now when
   * the limit cut the run short.
   */
  nextDueAt: number | null;
}

/**
 * `message.dispatch_due` (spec 7.4): dispatches due messages in send_at, seq order. Each message
 * runs in its own SAVEPOINT, so one that fails is rolled back alone and the others still commit
 * (spec 7.4: one failing message must not hold back the rest).
 */
export function dispatchDue(
  db: DatabaseSync,
  args: DispatchDueArgs,
  now: number,
): DispatchDueResult {
  const skip = [...(args.skip ?? [])];
  const due = prepareCached(db, SQL_DUE).all(now, JSON.stringify(skip), args.limit ?? 64) as {
    seq: number;
  }[];
  const wake = new Set<string>();
  const receipts: ReceiptRow[] = [];
  const failed: DispatchFailure[] = [];
  let dispatched = 0;
  for (const { seq } of due) {
    const msg = messageBySeq(db, seq);
    if (msg === undefined || msg.state !== "scheduled") continue;
    prepareCached(db, SQL_SAVEPOINT_ONE).run();
    let out: DispatchOutcome;
    try {
      out = dispatch(db, msg, now);
      prepareCached(db, SQL_RELEASE_ONE).run();
    } catch (err) {
      // SQLITE_FULL and the like end the whole transaction: then nothing can be kept.
      if (!db.isTransaction) throw err;
      prepareCached(db, SQL_ROLLBACK_ONE).run();
      prepareCached(db, SQL_RELEASE_ONE).run();
      failed.push({ seq, error: err instanceof Error ? err.message : String(err) });
      skip.push(seq);
      continue;
    }
    dispatched++;
    for (const id of out.wake) wake.add(id);
    receipts.push(...out.receipts);
  }
  const next = prepareCached(db, SQL_NEXT_DUE).get(JSON.stringify(skip)) as { at: number | null };
  return { dispatched, wake: [...wake], receipts, failed, nextDueAt: next.at };
}

/** Args of `message.recall`. */
export interface RecallArgs {
  senderId: string;
  id: string;
}

/** Result of `message.recall` (spec 6.4). */
export interface RecallResult {
  result: "recalled" | "partial" | "failed";
  recalled: number;
  accepted: number;
  /** expired + dropped + rejected. */
  other: number;
  /** Recalled deliveries that had been pushed: send `revoked` on these connections. */
  revoked: { endpointId: string; connCode: string }[];
}

/**
 * `message.recall` (spec 6.4, 7.6). Counts come from the deliveries as they stand after the
 * recall, so a repeated recall answers like the first one.
 *
 * @throws {OpError} `not_found` when neither the record nor its idempotency key exists.
 */
export function recallMessage(db: DatabaseSync, args: RecallArgs, now: number): RecallResult {
  const msg = messageById(db, args.senderId, args.id);
  const zero: RecallResult = { result: "failed", recalled: 0, accepted: 0, other: 0, revoked: [] };
  if (msg === undefined) {
    // spec 6.4: record deleted but the key remains -> failed.
    if (prepareCached(db, SQL_SEND_KEY).get(args.senderId, args.id) === undefined) {
      throw new OpError("not_found");
    }
    return zero;
  }
  if (msg.state === "scheduled" && completeEarly(db, msg.seq, "recalled")) {
    return { ...zero, result: "recalled" };
  }
  if (msg.state === "completed" && msg.reason === "recalled") {
    return { ...zero, result: "recalled" };
  }
  const revoked: RecallResult["revoked"] = [];
  if (msg.state === "dispatched") {
    const rows = prepareCached(db, SQL_RECALL_PENDING).all(now, msg.seq) as {
      endpoint_id: string;
      pushed_conn: string | null;
    }[];
    for (const r of rows) {
      if (r.pushed_conn !== null) {
        revoked.push({ endpointId: r.endpoint_id, connCode: r.pushed_conn });
      }
    }
  }
  const counts = countDeliveries(db, msg.seq);
  if (msg.state === "dispatched") finalize(db, msg.seq);
  return recallResult(counts, revoked);
}

/** A recall's answer from the message's delivery counts (spec 6.4); both stores use it. */
export function recallResult(
  counts: {
    recalled: number;
    accepted: number;
    expired: number;
    dropped: number;
    rejected: number;
  },
  revoked: RecallResult["revoked"],
): RecallResult {
  const other = counts.expired + counts.dropped + counts.rejected;
  const result = counts.recalled === 0 ? "failed" : counts.accepted > 0 ? "partial" : "recalled";
  return { result, recalled: counts.recalled, accepted: counts.accepted, other, revoked };
}

/** Whether two fingerprints are equal, byte for byte; both stores use it. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The message ops, merged into the writer's registry in `mod.ts`. */
export const messageOps = {
  "message.submit": submitMessage,
  "message.dispatch_due": dispatchDue,
  "message.recall": recallMessage,
};
