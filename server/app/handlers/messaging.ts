import type { Handler, HandlerTable } from "../mqtt_app.ts";
import type { App } from "../app_context.ts";
import {
  type ProtocolError,
  ProtocolError as PE,
  requestFingerprint,
  type RequestOf,
  resolveSendAt,
} from "../../protocol/mod.ts";
import type { SendData } from "../../protocol/frames.ts";
import type { Store } from "../../store/store.ts";
import { canonicalMeta } from "./meta.ts";
import { crashPoint } from "../../config/crash_point.ts";
import { decideTalk, isStale } from "../talk.ts";
import { msgFieldsOfSend } from "../messaging/frames.ts";
import type { ClaimedDelivery } from "../../store/ops/deliveries.ts";
import type { ClaimTicket } from "../messaging/push_loop.ts";

/**
 * How a request reaches the writer. The MQTT path passes its connection's pipeline (`write` tells
 * it the op is queued, `earlier` waits for the connection's earlier requests); the admin API's
 * send on behalf of an endpoint writes directly.
 */
export interface Pipeline {
  write: Store["run"];
  earlier(): Promise<void>;
}

function direct(app: App): Pipeline {
  return { write: app.store.run.bind(app.store), earlier: () => Promise.resolve() };
}

/**
 * spec 6.2, 7.3: validate, then one writer op checks idempotency FIRST, then target and quota,
 * inserts message, body and send key, and dispatches when due. `resp` only after COMMIT.
 * The MQTT `send` frame and the admin API's send on behalf of an endpoint both come here.
 */
export async function sendAs(
  app: App,
  senderId: string,
  frame: RequestOf<"send">,
  pipe: Pipeline = direct(app),
): Promise<SendData> {
  const now = app.clock();
  // The endpoint's default delay applies only when the request names no time (spec 6.2).
  const defaultDelay = frame.send_at_ms === null && frame.delay_ms === null
    ? (await app.store.query("endpoint.self_row", { id: senderId }))?.default_delay_ms ?? 0
    : 0;
  const fingerprint = requestFingerprint(frame);
  const meta = canonicalMeta(frame.meta);
  let sendAt = resolveSendAt(frame, now, defaultDelay, app.config.limits);
  if (typeof sendAt !== "number") {
    // spec 7.3 step 2: a repeat of an accepted request must still get its original answer,
    // even if the schedule bound would now refuse it; the op answers duplicates first.
    const err: ProtocolError = sendAt;
    // A first request with this id may still be in flight on this connection: let it commit.
    await pipe.earlier();
    if (!(await app.store.query("message.send_key_exists", { senderId, id: frame.id }))) throw err;
    sendAt = now;
  }
  // A direct message due now may take its online receiver's claim: the submit then also marks
  // the delivery as pushed, and the push needs no second writer round trip (issue 33).
  let ticket: ClaimTicket | null = null;
  let claimed: readonly ClaimedDelivery[] | null = null;
  const submit = async () => {
    // Without a talk password the op decides alone on the write connection (a grant or no
    // password needed), so the main thread reads nothing for it (issue 19).
    // spec 7.3 step 2: a known id is answered from its send key before any talk check, so a
    // repeat never fails on a password (or a lock) that changed after the first commit.
    const talk = frame.to.kind === "endpoint" && frame.talk_password &&
        !(await app.store.query("message.send_key_exists", { senderId, id: frame.id }))
      ? await decideTalk(app, senderId, frame.to.id, frame.talk_password)
      : undefined;
    // Lent right before the op is queued, so no disconnect op of that connection can be queued
    // between the two: a mark of a connection gone meanwhile is cleared by its disconnect op.
    if (ticket === null && frame.to.kind === "endpoint" && sendAt as number <= now) {
      ticket = app.messaging.lendClaimTo(frame.to.id);
    }
    return await pipe.write("message.submit", {
      senderId,
      id: frame.id,
      fingerprint,
      toKind: frame.to.kind,
      toId: frame.to.id,
      body: frame.body.bytes,
      bodyEnc: frame.body.enc,
      contentType: frame.body.content_type,
      meta,
      sendAt: sendAt as number,
      keep: frame.offline.keep,
      ttlSeconds: frame.offline.ttl_seconds,
      receipt: frame.receipt,
      ...(talk ? { talk } : {}),
      ...(ticket ? { claim: { connCode: ticket.connCode, limit: ticket.limit } } : {}),
    });
  };
  let r;
  try {
    try {
      r = await submit();
    } catch (err) {
      if (!isStale(err)) throw err;
      r = await submit(); // the target's talk password changed meanwhile: decide once more
    }
    crashPoint("send_committed");
    if (r.claimed !== undefined && r.claimed.length > 0) crashPoint("send_marked");
    if (r.state === "dispatched" && !r.duplicate && r.seq !== undefined) {
      app.messaging.prime(r.seq, msgFieldsOfSend(senderId, frame, meta, r.sendAt));
    }
    // Committed: whatever happens next, the marked deliveries are pushed (see finally).
    claimed = r.claimed ?? [];
  } finally {
    // After prime: the lent loop builds the frame at once. null: the op failed, nothing marked.
    (ticket as ClaimTicket | null)?.done(claimed);
  }
  app.messaging.apply({ wake: r.wake, receipts: r.receipts });
  if (r.state === "scheduled") app.messaging.scheduled(r.sendAt);
  const data: SendData = { id: frame.id, send_at_ms: r.sendAt, state: r.state };
  return data;
}

const send: Handler<"send"> = (ctx, frame) => sendAs(ctx.app, ctx.conn.endpointId, frame, ctx);

/** spec 6.3, 7.6: any pending delivery of the acker; repeats succeed; final states reported. */
const ack: Handler<"ack"> = async (ctx, frame) => {
  const { app, conn } = ctx;
  // The connection's push loop may lend its claim: the ack op then also marks what the freed
  // window slot takes, saving a writer round trip per message (issue 19).
  const ticket = app.messaging.lendClaim(conn.code, frame.from, frame.id);
  let claimed: readonly ClaimedDelivery[] | null = null;
  try {
    const r = await ctx.write("delivery.ack", {
      endpointId: conn.endpointId,
      from: frame.from,
      id: frame.id,
      ...(ticket ? { claim: { connCode: ticket.connCode, limit: ticket.limit } } : {}),
    });
    // Committed: whatever happens next, the marked deliveries are pushed (see finally).
    claimed = r.claimed;
    const lentBy = ticket ? conn.code : null;
    app.messaging.acked(conn.endpointId, frame.from, frame.id, r.wasPushedTo, r.completed, lentBy);
    app.messaging.apply({ receipts: r.receipts, framesSettled: true });
    return { result: r.result };
  } finally {
    ticket?.done(claimed);
  }
};

/** spec 6.4, 7.6: recall; pushed deliveries get a best-effort `revoked`. */
export async function recallAs(
  app: App,
  senderId: string,
  id: string,
  write: Store["run"] = app.store.run.bind(app.store),
) {
  const r = await write("message.recall", { senderId, id });
  app.messaging.apply({
    revoked: r.revoked.map((x) => ({
      endpointId: x.endpointId,
      connCode: x.connCode,
      msgId: id,
      from: senderId,
      reason: "recalled" as const,
    })),
  });
  return { result: r.result, recalled: r.recalled, accepted: r.accepted, other: r.other };
}

const recall: Handler<"recall"> = (ctx, frame) =>
  recallAs(ctx.app, ctx.conn.endpointId, frame.id, (op, args) => ctx.write(op, args));

/** spec 6.4: own messages only; no body; records that are gone -> not_found. */
export async function statusAs(app: App, senderId: string, frame: RequestOf<"status">) {
  const s = await app.store.query("message.status", {
    senderId,
    id: frame.id,
    cursor: frame.cursor,
    limit: frame.limit,
  });
  if (!s) throw new PE("not_found");
  return {
    id: s.id,
    state: s.state,
    reason: s.reason,
    send_at_ms: s.sendAtMs,
    counts: s.counts,
    items: s.items.map((i) => ({ endpoint_id: i.endpointId, state: i.state, reason: i.reason })),
    next_cursor: s.nextCursor,
  };
}

const status: Handler<"status"> = ({ app, conn }, frame) => {
  try {
    return Promise.resolve(statusAs(app, conn.endpointId, frame));
  } catch (err) {
    return Promise.reject(err);
  }
};

/** spec 6.4: the sender confirms a receipt; it is not pushed again. */
const receiptAck: Handler<"receipt_ack"> = async (ctx, frame) => {
  const { app, conn } = ctx;
  const receiptId = Number(frame.receipt_id);
  if (!Number.isSafeInteger(receiptId) || receiptId <= 0) {
    throw new PE("bad_request", "receipt_id 不合法");
  }
  const r = await ctx.write("receipt.ack", { senderId: conn.endpointId, receiptId });
  app.messaging.receiptAcked(conn.code, receiptId);
  if (!r.ok) throw new PE("not_found");
  return {};
};

/** The message frames of spec 6.2-6.4. */
export const messagingHandlers: HandlerTable = {
  send,
  ack,
  recall,
  status,
  receipt_ack: receiptAck,
};
