import type {
  DispatchDueArgs,
  DispatchDueResult,
  DispatchFailure,
  DispatchOutcome,
  RecallArgs,
  RecallResult,
  SubmitArgs,
  SubmitResult,
} from "../../ops/messages.ts";
import { recallResult, sameBytes } from "../../ops/messages.ts";
import type { MessageRow, MessageState, ReceiptRow } from "../../ops/receipts.ts";
import { OpError } from "../../op_error.ts";
import type { PgOpsContext, PgTx } from "../op.ts";
import {
  completeEarly,
  countDeliveries,
  finalize,
  messageById,
  messageBySeq,
  noteReceipt,
} from "./receipts.ts";
import { checkTalk, writeReplyGrant } from "./talk.ts";
import { claimDeliveries } from "./deliveries.ts";
import type { ClaimedDelivery } from "../../ops/deliveries.ts";

// Submit, dispatch and recall of messages (spec 7.3, 7.4, 6.4 / 7.6 撤回); the twin of
// server/store/ops/messages.ts.

const SQL_SEND_KEY = "SELECT 1 AS found FROM send_keys WHERE sender_id = $1 AND msg_id = $2";
const SQL_SEND_KEY_AND_MESSAGE = `SELECT k.request_sha256, k.created_at, m.seq, m.send_at,
  m.state FROM (SELECT 1) AS one LEFT JOIN send_keys k ON k.sender_id = $1 AND k.msg_id = $2
  LEFT JOIN messages m ON m.sender_id = $1 AND m.id = $2`;
// Everything submit checks before its first write, in one round trip (spec 7.3 steps 2-3): the
// key and record under this id, the target (endpoint, or group and the sender's membership), the
// sender's talk hash (for the reply grant) and its unfinished-message count.
const SQL_SUBMIT_FACTS = `SELECT k.request_sha256, k.created_at, m.seq, m.send_at, m.state,
    t.id AS target_id, t.enabled AS target_enabled, t.offline_since AS target_offline_since,
    t.online_since AS target_online_since, t.talk_hash AS target_talk_hash, g.id AS group_id,
    gm.endpoint_id AS member_id, s.talk_hash AS sender_talk_hash, coalesce(q.n, 0) AS sender_pending,
    coalesce(qt.n, 0) AS target_pending
  FROM (SELECT 1) AS one
  LEFT JOIN send_keys k ON k.sender_id = $1 AND k.msg_id = $2
  LEFT JOIN messages m ON m.sender_id = $1 AND m.id = $2
  LEFT JOIN endpoints t ON $3 = 'endpoint' AND t.id = $4
  LEFT JOIN groups g ON $3 = 'group' AND g.id = $4
  LEFT JOIN group_members gm ON gm.group_id = g.id AND gm.endpoint_id = $1
  LEFT JOIN endpoints s ON s.id = $1
  LEFT JOIN quota_counts q ON q.kind = 'sender' AND q.id = $1
  LEFT JOIN quota_counts qt ON qt.kind = 'receiver' AND qt.id = t.id`;
const SQL_GROUP_EXISTS = "SELECT 1 AS found FROM groups WHERE id = $1";
const SQL_IS_MEMBER =
  "SELECT 1 AS found FROM group_members WHERE group_id = $1 AND endpoint_id = $2";
// seq from its counter row, locked to COMMIT: seqs grow in commit order (schema_v1.ts).
// The message and its body in one statement. `keyed`: the send key first (parameter 15: the
// fingerprint) and nothing at all when the key exists; and, when parameter 16 names the target,
// its pending delivery (parameter 17: its expire_at) as `dispatch` would write it.
function insertMessageSql(keyed: boolean): string {
  const key = keyed
    ? `k AS (INSERT INTO send_keys (sender_id, msg_id, request_sha256, created_at)
      VALUES ($2, $1, $15, $13) ON CONFLICT (sender_id, msg_id) DO NOTHING RETURNING 1),
    `
    : "";
  const delivery = keyed
    ? `,
  d AS (INSERT INTO deliveries (seq, endpoint_id, send_at, keep, state, reason, expire_at,
      attempts, updated_at)
    SELECT m.seq, $16::text, $8::bigint, $9::int, 'pending', '', $17::bigint, 0, $13::bigint
    FROM m WHERE $16::text IS NOT NULL)`
    : "";
  return `WITH ${key}c AS (
    UPDATE id_counters SET n = n + 1 WHERE name = 'messages'${
    keyed ? " AND EXISTS (SELECT 1 FROM k)" : ""
  } RETURNING n),
  m AS (INSERT INTO messages (seq, id, sender_id, dest_kind, dest_id, meta, content_type,
      body_enc, send_at, keep, ttl_seconds, receipt, state, reason, created_at)
    SELECT c.n, $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::bigint,
      $9::int, $10::bigint, $11::int, $12::text, '', $13::bigint FROM c
    RETURNING seq)${delivery}
  INSERT INTO message_bodies (seq, body) SELECT m.seq, $14::bytea FROM m RETURNING seq`;
}
const SQL_INSERT_MESSAGE = insertMessageSql(false);
// The send key, the message and its body: no row when the key exists (another server's).
const SQL_INSERT_KEYED_MESSAGE = insertMessageSql(true);
// ON CONFLICT: a concurrent submit of the same (sender, id) by another server waits for that
// one's COMMIT and then inserts nothing; the op answers from the row it committed.
const SQL_INSERT_SEND_KEY = `INSERT INTO send_keys (sender_id, msg_id, request_sha256, created_at)
  VALUES ($1, $2, $3, $4) ON CONFLICT (sender_id, msg_id) DO NOTHING`;
const SQL_MARK_DISPATCHED =
  "UPDATE messages SET state = 'dispatched' WHERE seq = $1 AND state = 'scheduled'";
// With each recipient's pending count (the quota of spec 7.3): one dispatch gives a recipient
// one delivery, so the count read here stays exact while its deliveries are written. A cluster
// node (issue 30) also reads `online_since`: the endpoint may be connected to another node.
const SQL_ENDPOINT_RECIPIENT = `SELECT e.id, e.enabled, e.offline_since, e.online_since,
    coalesce(q.n, 0) AS pending
  FROM endpoints e LEFT JOIN quota_counts q ON q.kind = 'receiver' AND q.id = e.id
  WHERE e.id = $1`;
const SQL_GROUP_RECIPIENTS = `SELECT e.id, e.enabled, e.offline_since, e.online_since,
    coalesce(q.n, 0) AS pending
  FROM group_members gm
  JOIN endpoints e ON e.id = gm.endpoint_id
  LEFT JOIN quota_counts q ON q.kind = 'receiver' AND q.id = e.id
  WHERE gm.group_id = $1 AND gm.endpoint_id <> $2 ORDER BY gm.endpoint_id`;
const SQL_INSERT_DELIVERY = `INSERT INTO deliveries (seq, endpoint_id, send_at, keep, state,
  reason, expire_at, attempts, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8)`;
// SKIP LOCKED: another server dispatching at the same time takes the rows this one holds.
const SQL_DUE = `SELECT seq FROM messages WHERE state = 'scheduled' AND send_at <= $1
    AND seq <> ALL($2::bigint[])
  ORDER BY send_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED`;
const SQL_NEXT_DUE = `SELECT min(send_at) AS at FROM messages WHERE state = 'scheduled'
  AND seq <> ALL($1::bigint[])`;
const SQL_RECALL_PENDING = `UPDATE deliveries SET state = 'recalled', reason = '', updated_at = $1
  WHERE seq = $2 AND state = 'pending' RETURNING endpoint_id, pushed_conn`;

interface Recipient {
  id: string;
  enabled: number;
  offline_since: number | null;
  /** Its pending deliveries (trigger-kept `quota_counts`), read with the row. */
  pending: number;
  /** Read for a cluster node (issue 30): the endpoint may be connected to another node. */
  online_since: number | null;
}

interface Target extends Recipient {
  talk_hash: string | null;
}

/** `message.submit` (spec 7.3); see `submitMessage` of the SQLite ops for the steps. */
export function submitMessage(t: PgTx, args: SubmitArgs, now: number): Promise<SubmitResult> {
  return submitSpeculated(t, args, now) ?? submitInTurn(t, args, now);
}

async function submitInTurn(t: PgTx, args: SubmitArgs, now: number): Promise<SubmitResult> {
  const r = await submitOnly(t, args, now);
  return withClaim(r, args, claimAfter(t, args, now));
}

/** Claims for the direct message's target after the submit (issue 33), if asked to. */
function claimAfter(
  t: PgTx,
  args: SubmitArgs,
  now: number,
): Promise<{ claimed: ClaimedDelivery[] }> | null {
  if (args.claim === undefined || args.toKind !== "endpoint") return null;
  // After every check and write of the submit, as `delivery.claim` does.
  return claimDeliveries(t, { endpointId: args.toId, ...args.claim }, now);
}

/** `r` with what {@link claimAfter} claimed. */
async function withClaim(
  r: SubmitResult,
  args: SubmitArgs,
  claiming: Promise<{ claimed: ClaimedDelivery[] }> | null,
): Promise<SubmitResult> {
  if (claiming === null) return r;
  const { claimed } = await claiming;
  return { ...r, wake: r.wake.filter((id) => id !== args.toId), claimed };
}

/**
 * A pipelined batch's submit of a message to an endpoint whose delivery's placement is known
 * before reading (kept, or the target connected, or not due yet): the facts, the insert of key,
 * message, body and delivery, and the claim, all sent at once (`seal`). The answers must then
 * show that the steps of `submitOnly` would have written the same; when they do not (a refusal,
 * a talk password, another placement), it throws and the batch runs again one op at a time,
 * where this is not tried. Null (nothing sent) when it does not apply.
 */
function submitSpeculated(t: PgTx, args: SubmitArgs, now: number): Promise<SubmitResult> | null {
  // A cluster node (issue 30) places by what the store says of other nodes' connections, which
  // the op reads: it sends nothing early.
  if (!t.speculative || args.toKind !== "endpoint" || t.ctx.cluster) return null;
  // The context as the op found it: the answers are read after later ops of the batch ran.
  const at = {
    limits: t.ctx.limits,
    connected: new Set(t.ctx.connected.has(args.toId) ? [args.toId] : []),
    cluster: false,
  };
  const direct = args.sendAt <= now;
  const expected: Placement | null = !direct
    ? null
    : args.keep
    ? ["pending", "", now + args.ttlSeconds * 1000]
    : at.connected.has(args.toId)
    ? ["pending", "", null]
    : null;
  if (direct && expected === null) return null;
  const facts = t.q<SubmitFacts>(SQL_SUBMIT_FACTS, [
    args.senderId,
    args.id,
    args.toKind,
    args.toId,
  ]);
  const state = direct ? "dispatched" : "scheduled";
  const keyed = insertMessage(t, args, now, state, {
    targetId: direct ? args.toId : null,
    expireAt: expected?.[2] ?? null,
  });
  const claiming = claimAfter(t, args, now);
  keyed.catch(() => {});
  claiming?.catch(() => {});
  t.seal();
  return (async () => {
    const f = (await facts)[0];
    const duplicate = duplicateOf(f, args);
    if (duplicate !== null) {
      if ((await keyed) !== null) throw new Error("A repeat's message was inserted");
      return withClaim(duplicate, args, claiming);
    }
    const target = targetOf(f, args);
    if (target === null) throw new Error("A direct message without its target");
    const max = at.limits.maxPendingPerSender;
    if (max > 0 && f.sender_pending >= max) throw new OpError("quota_exceeded");
    if (target.talk_hash !== null || f.sender_talk_hash !== null) {
      throw new Error("Submit needs the talk checks");
    }
    if (direct) {
      const placed = placeDelivery(
        at,
        { keep: args.keep ? 1 : 0, ttl_seconds: args.ttlSeconds },
        target,
        now,
      );
      if (placed.join() !== expected?.join()) {
        throw new Error("Submit placed its delivery otherwise");
      }
    }
    const msg = await keyed;
    if (msg === null) throw new Error(`Send key ${args.senderId}/${args.id} taken meanwhile`);
    const r: SubmitResult = {
      seq: msg.seq,
      sendAt: msg.send_at,
      duplicate: false,
      state,
      wake: direct ? [args.toId] : [],
      receipts: [],
    };
    return withClaim(r, args, claiming);
  })();
}

async function submitOnly(t: PgTx, args: SubmitArgs, now: number): Promise<SubmitResult> {
  const facts = (await t.q<SubmitFacts>(SQL_SUBMIT_FACTS, [
    args.senderId,
    args.id,
    args.toKind,
    args.toId,
  ]))[0];
  const duplicate = duplicateOf(facts, args);
  if (duplicate !== null) return duplicate;
  const target = targetOf(facts, args);
  const max = t.ctx.limits.maxPendingPerSender;
  if (max > 0 && facts.sender_pending >= max) throw new OpError("quota_exceeded");
  const direct = target !== null && args.sendAt <= now;
  const state = direct ? "dispatched" : "scheduled";
  // The key is the first write: when another server committed the same (sender, id) meanwhile,
  // nothing was written yet and the answer is that one's (spec 7.3 step 2). A refusal below
  // rolls the key back with the op's savepoint. With no talk password on either side the key,
  // the message and its body go in one statement (one round trip).
  const talkWork = target !== null &&
    (target.talk_hash !== null || facts.sender_talk_hash !== null);
  // A direct message's delivery goes in the same statement when it is pending (the placement
  // reads nothing the insert changes); any other placement is `dispatch`'s, with its receipt.
  const placed = direct && target !== null
    ? placeDelivery(t.ctx, { keep: args.keep ? 1 : 0, ttl_seconds: args.ttlSeconds }, target, now)
    : null;
  const folded = !talkWork && placed !== null && placed[0] === "pending";
  const keyed = talkWork ? null : await insertMessage(t, args, now, state, {
    targetId: folded ? args.toId : null,
    expireAt: folded ? placed[2] : null,
  });
  if (talkWork ? !(await insertSendKey(t, args, now)) : keyed === null) {
    const first = await findDuplicate(t, args);
    if (first !== null) return first;
    throw new Error(`Send key ${args.senderId}/${args.id} conflicted but is not readable`);
  }
  if (talkWork && target !== null) {
    const talk = args.talk ?? { verdict: "no_password" as const };
    await checkTalk(t, { senderId: args.senderId, targetId: args.toId, ...talk }, now, {
      talkHash: target.talk_hash,
    });
    if (facts.sender_talk_hash !== null) await writeReplyGrant(t, args.senderId, args.toId, now);
  }
  const msg = keyed ?? (await insertMessage(t, args, now, state, null))!;
  const out: DispatchOutcome = msg.send_at > now
    ? { state: "scheduled", wake: [], receipts: [] }
    : folded
    ? { state: "dispatched", wake: [args.toId], receipts: [] }
    : await dispatch(t, msg, now, target === null ? undefined : [target]);
  return { seq: msg.seq, sendAt: msg.send_at, duplicate: false, ...out };
}

/** What {@link SQL_SUBMIT_FACTS} reads. */
interface SubmitFacts extends KeyAndRecord {
  target_id: string | null;
  target_enabled: number | null;
  target_offline_since: number | null;
  target_online_since: number | null;
  target_talk_hash: string | null;
  group_id: string | null;
  member_id: string | null;
  sender_talk_hash: string | null;
  sender_pending: number;
  target_pending: number;
}

/** The send key and record under one (sender, id). */
interface KeyAndRecord {
  request_sha256: Uint8Array | null;
  created_at: number | null;
  seq: number | null;
  send_at: number | null;
  state: MessageState | null;
}

/**
 * spec 7.3 step 3 on the facts read: a direct message's target (null for a group).
 * @throws {OpError} `invalid_target`, `endpoint_disabled`, `not_member`.
 */
function targetOf(f: SubmitFacts, args: SubmitArgs): Target | null {
  if (args.toKind === "endpoint") {
    if (f.target_id === null) throw new OpError("invalid_target");
    if (f.target_enabled !== 1) throw new OpError("endpoint_disabled");
    return {
      id: f.target_id,
      enabled: f.target_enabled,
      offline_since: f.target_offline_since,
      pending: f.target_pending,
      online_since: f.target_online_since,
      talk_hash: f.target_talk_hash,
    };
  }
  if (f.group_id === null) throw new OpError("invalid_target");
  if (f.member_id === null) throw new OpError("not_member");
  return null;
}

/** spec 7.3 step 2: the original answer of a repeat, `conflict`, or null for a new message. */
export async function findDuplicate(t: PgTx, args: SubmitArgs): Promise<SubmitResult | null> {
  const row = (await t.q<KeyAndRecord>(SQL_SEND_KEY_AND_MESSAGE, [args.senderId, args.id]))[0];
  return duplicateOf(row, args);
}

/** {@link findDuplicate} on a row already read. @throws {OpError} `conflict`. */
function duplicateOf(row: KeyAndRecord, args: SubmitArgs): SubmitResult | null {
  if (row.request_sha256 === null) {
    // The key outlives its record, never the reverse; a lone record is a different request.
    if (row.seq !== null) throw new OpError("conflict");
    return null;
  }
  if (!sameBytes(row.request_sha256, args.fingerprint)) throw new OpError("conflict");
  const none = { duplicate: true, wake: [], receipts: [] };
  if (row.seq === null) return { sendAt: row.created_at!, state: "completed", ...none };
  return { seq: row.seq, sendAt: row.send_at!, state: row.state!, ...none };
}

/**
 * Inserts the message and its body; with `keyed`, its send key first (null when the key exists)
 * and, when `keyed.targetId` is set, its pending delivery to that target.
 */
async function insertMessage(
  t: PgTx,
  args: SubmitArgs,
  now: number,
  state: "scheduled" | "dispatched",
  keyed: { targetId: string | null; expireAt: number | null } | null,
): Promise<MessageRow | null> {
  const rows = await t.q<{ seq: number }>(
    keyed !== null ? SQL_INSERT_KEYED_MESSAGE : SQL_INSERT_MESSAGE,
    [
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
      args.body,
      ...(keyed === null ? [] : [args.fingerprint, keyed.targetId, keyed.expireAt]),
    ],
  );
  if (rows.length === 0) return null;
  const seq = rows[0].seq;
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

async function insertSendKey(t: PgTx, args: SubmitArgs, now: number): Promise<boolean> {
  const r = await t.q(SQL_INSERT_SEND_KEY, [args.senderId, args.id, args.fingerprint, now]);
  return r.count > 0;
}

/** spec 7.4: turns a scheduled message into deliveries; see `dispatch` of the SQLite ops. */
export async function dispatch(
  t: PgTx,
  msg: MessageRow,
  now: number,
  known?: Recipient[],
): Promise<DispatchOutcome> {
  const receipts: ReceiptRow[] = [];
  const recipients = known ?? await resolveRecipients(t, msg);
  if (typeof recipients === "string") {
    if (msg.state !== "scheduled") {
      throw new Error(`Dispatch of message ${msg.seq} found ${recipients}`);
    }
    if (!(await completeEarly(t, msg.seq, recipients))) return current(t, msg.seq, receipts);
    await noteReceipt(t, receipts, msg, "", "rejected", recipients, now);
    return { state: "completed", wake: [], receipts };
  }
  if (
    msg.state === "scheduled" && (await t.q(SQL_MARK_DISPATCHED, [msg.seq])).count === 0
  ) {
    return current(t, msg.seq, receipts);
  }
  const wake: string[] = [];
  for (const r of recipients) {
    const [state, reason, expireAt] = placeDelivery(t.ctx, msg, r, now);
    // Pipelined: a fan-out to N members is not N round trips.
    t.send(SQL_INSERT_DELIVERY, [
      msg.seq,
      r.id,
      msg.send_at,
      msg.keep,
      state,
      reason,
      expireAt,
      now,
    ]);
    if (state === "pending") wake.push(r.id);
    else await noteReceipt(t, receipts, msg, r.id, state, reason, now);
  }
  const done = wake.length === 0 && await finalize(t, msg.seq);
  return { state: done ? "completed" : "dispatched", wake, receipts };
}

async function current(t: PgTx, seq: number, receipts: ReceiptRow[]): Promise<DispatchOutcome> {
  return { state: (await messageBySeq(t, seq))?.state ?? "completed", wake: [], receipts };
}

async function resolveRecipients(t: PgTx, msg: MessageRow): Promise<Recipient[] | string> {
  if (msg.dest_kind === "endpoint") {
    const row = (await t.q<Recipient>(SQL_ENDPOINT_RECIPIENT, [msg.dest_id]))[0];
    return row === undefined ? "endpoint_deleted" : [row];
  }
  if ((await t.q(SQL_GROUP_EXISTS, [msg.dest_id])).length === 0) return "group_dissolved";
  if ((await t.q(SQL_IS_MEMBER, [msg.dest_id, msg.sender_id])).length === 0) {
    return "sender_left";
  }
  const rows = await t.q<Recipient>(SQL_GROUP_RECIPIENTS, [msg.dest_id, msg.sender_id]);
  return rows.length === 0 ? "no_recipients" : [...rows];
}

type Placement = [
  state: "pending" | "rejected" | "dropped",
  reason: string,
  expireAt: number | null,
];

/** Where `r`'s delivery goes, by the limits and live connections of `ctx`. */
function placeDelivery(
  ctx: Pick<PgOpsContext, "limits" | "connected" | "cluster">,
  msg: Pick<MessageRow, "keep" | "ttl_seconds">,
  r: Recipient,
  now: number,
): Placement {
  const { graceMs, maxPendingPerReceiver: max } = ctx.limits;
  if (r.enabled !== 1) return ["rejected", "endpoint_disabled", null];
  if (max > 0 && r.pending >= max) {
    return ["rejected", "queue_full", null];
  }
  if (msg.keep === 1) return ["pending", "", now + msg.ttl_seconds * 1000];
  if (ctx.connected.has(r.id) || (ctx.cluster && onlineElsewhere(r))) {
    return ["pending", "", null];
  }
  if (r.offline_since !== null && now < r.offline_since + graceMs) {
    return ["pending", "", r.offline_since + graceMs];
  }
  return ["dropped", "offline", null];
}

/**
 * In a cluster (issue 30) the connection table of this process sees only its own node: an
 * endpoint whose last handshake is newer than its last disconnect is connected to some node.
 */
function onlineElsewhere(r: Recipient): boolean {
  if (r.online_since === null) return false;
  return r.offline_since === null || Number(r.online_since) > Number(r.offline_since);
}

/** `message.dispatch_due` (spec 7.4): each message in its own savepoint. */
export async function dispatchDue(
  t: PgTx,
  args: DispatchDueArgs,
  now: number,
): Promise<DispatchDueResult> {
  const skip = [...(args.skip ?? [])];
  const due = await t.q<{ seq: number }>(SQL_DUE, [now, skip, args.limit ?? 64]);
  const wake = new Set<string>();
  const receipts: ReceiptRow[] = [];
  const failed: DispatchFailure[] = [];
  let dispatched = 0;
  for (const { seq } of due) {
    const msg = await messageBySeq(t, seq);
    if (msg === undefined || msg.state !== "scheduled") continue;
    await t.q("SAVEPOINT dispatch_one");
    let out: DispatchOutcome;
    try {
      out = await dispatch(t, msg, now);
      await t.q("RELEASE SAVEPOINT dispatch_one");
    } catch (err) {
      // A lost connection makes the ROLLBACK TO throw: then the batch fails.
      await t.q("ROLLBACK TO SAVEPOINT dispatch_one");
      await t.q("RELEASE SAVEPOINT dispatch_one");
      failed.push({ seq, error: err instanceof Error ? err.message : String(err) });
      skip.push(seq);
      continue;
    }
    dispatched++;
    for (const id of out.wake) wake.add(id);
    receipts.push(...out.receipts);
  }
  const next = (await t.q<{ at: number | null }>(SQL_NEXT_DUE, [skip]))[0];
  return { dispatched, wake: [...wake], receipts, failed, nextDueAt: next.at };
}

/** `message.recall` (spec 6.4, 7.6). @throws {OpError} `not_found`. */
export async function recallMessage(
  t: PgTx,
  args: RecallArgs,
  now: number,
): Promise<RecallResult> {
  const msg = await messageById(t, args.senderId, args.id);
  const zero: RecallResult = { result: "failed", recalled: 0, accepted: 0, other: 0, revoked: [] };
  if (msg === undefined) {
    if ((await t.q(SQL_SEND_KEY, [args.senderId, args.id])).length === 0) {
      throw new OpError("not_found");
    }
    return zero;
  }
  if (msg.state === "scheduled" && await completeEarly(t, msg.seq, "recalled")) {
    return { ...zero, result: "recalled" };
  }
  if (msg.state === "completed" && msg.reason === "recalled") {
    return { ...zero, result: "recalled" };
  }
  const revoked: RecallResult["revoked"] = [];
  if (msg.state === "dispatched") {
    const rows = await t.q<{ endpoint_id: string; pushed_conn: string | null }>(
      SQL_RECALL_PENDING,
      [now, msg.seq],
    );
    for (const r of rows) {
      if (r.pushed_conn !== null) {
        revoked.push({ endpointId: r.endpoint_id, connCode: r.pushed_conn });
      }
    }
  }
  const counts = await countDeliveries(t, msg.seq);
  if (msg.state === "dispatched") await finalize(t, msg.seq);
  return recallResult(counts, revoked);
}

/** The message ops. */
export const pgMessageOps = {
  "message.submit": submitMessage,
  "message.dispatch_due": dispatchDue,
  "message.recall": recallMessage,
};
