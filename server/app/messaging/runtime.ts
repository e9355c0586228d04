import type { App } from "../app_context.ts";
import type { Conn } from "../connections.ts";
import type { MqttApp } from "../mqtt_app.ts";
import type { ReceiptRow } from "../../store/ops/receipts.ts";
import type { HousekeepingCursor, HousekeepingResult } from "../../store/ops/housekeeping.ts";
import type { Effects, Messaging, RevokedNotice } from "./effects.ts";
import { Bookkeeping } from "./bookkeeping.ts";
import { MsgFrameCache, type MsgFrameFields, revokedFrame } from "./frames.ts";
import { type ClaimTicket, PushLoop } from "./push_loop.ts";
import { ReceiptPusher } from "./receipt_pusher.ts";
import { Semaphore } from "./semaphore.ts";

/** spec 7.5: at most 64 frames over 64 KiB in flight server-wide. */
const BIG_FRAME_SLOTS = 64;
/** spec 7.5: the cleanup loop runs about every second. */
const CLEANUP_MS = 1000;
/** spec 7.6: housekeeping runs hourly, in batches of a few thousand rows. */
const HOUSEKEEPING_MS = 3_600_000;
const HOUSEKEEPING_BATCH = 2000;
const EXPIRE_BATCH = 500;
const DISPATCH_BATCH = 64;
/** A message whose dispatch failed is retried after 1 s, then 2 s, … up to a minute. */
const DISPATCH_RETRY_MS = 1000;
const DISPATCH_RETRY_MAX_MS = 60_000;
/** Longest timer we arm; later schedules are re-checked then (setTimeout caps at 2^31-1 ms). */
const MAX_TIMER_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Optional observers (metrics). */
export interface MessagingObservers {
  observeDuePush?(ms: number): void;
  observeAck?(ms: number): void;
  /** Hears every committed op's effects (the webhook dispatcher, issue 34). */
  applied?(fx: Effects): void;
}

/**
 * The live side of messaging (spec 7.4-7.6): push loops and receipt pushers per handshaken
 * connection, the due-time scheduler, the per-second cleanup loop and hourly housekeeping.
 */
export class MessagingRuntime implements Messaging {
  readonly bookkeeping: Bookkeeping;
  #app: App;
  #mqtt: MqttApp;
  #frames: MsgFrameCache;
  #bigFrames = new Semaphore(BIG_FRAME_SLOTS);
  #push = new Map<string, PushLoop>();
  #receipts = new Map<string, ReceiptPusher>();
  #obs: MessagingObservers;
  #dueTimer: ReturnType<typeof setTimeout> | null = null;
  #dueAt: number | null = null;
  #dispatching = false;
  #dispatchAgain = false;
  /** Messages whose dispatch failed: when to try again, and the pause that led there. */
  #dispatchRetries = new Map<number, { at: number; wait: number }>();
  #cleanupTimer: ReturnType<typeof setInterval> | null = null;
  #housekeepingTimer: ReturnType<typeof setInterval> | null = null;
  #cleaning = false;
  #stopped = false;
  /**
   * A cluster node's wake-ups for endpoints with no push loop or receipt pusher here (issue 30);
   * null on a single node.
   */
  remote: ((deliveries: string[], receipts: string[]) => void) | null = null;
  /** A cluster node's `revoked` notices for connections held elsewhere (issue 30); null on one. */
  remoteRevoked: ((notices: RevokedNotice[]) => void) | null = null;
  /**
   * A cluster node's share of the duties (issue 30): scheduled dispatch, the expiry cleanup and
   * housekeeping run only while this answers true. Null on a single node (always run).
   */
  duties: (() => boolean) | null = null;

  constructor(app: App, mqtt: MqttApp, obs: MessagingObservers = {}) {
    this.#app = app;
    this.#mqtt = mqtt;
    this.#frames = new MsgFrameCache(app.store);
    this.#obs = obs;
    this.bookkeeping = new Bookkeeping(app);
    mqtt.listen({
      handshaken: (conn) => this.#online(conn),
      gone: (conn, wasCurrent) => this.#offline(conn, wasCurrent),
    });
  }

  /** Starts the scheduler and the cleanup loops (after startup recovery, spec 7.8). */
  async start(): Promise<void> {
    this.#cleanupTimer = setInterval(() => this.#cleanup(), CLEANUP_MS);
    this.#housekeepingTimer = setInterval(() => this.housekeeping(), HOUSEKEEPING_MS);
    const due = await this.#app.store.query("message.next_due_at", {});
    if (due !== null && !this.#stopped) this.scheduled(due);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#dueTimer) clearTimeout(this.#dueTimer);
    if (this.#cleanupTimer) clearInterval(this.#cleanupTimer);
    if (this.#housekeepingTimer) clearInterval(this.#housekeepingTimer);
    for (const p of this.#push.values()) p.stop();
    for (const r of this.#receipts.values()) r.stop();
    this.bookkeeping.stop();
  }

  apply(fx: Effects): void {
    if (this.#stopped) return;
    this.#obs.applied?.(fx);
    const farDeliveries: string[] = [];
    const farReceipts: string[] = [];
    for (const id of new Set(fx.wake ?? [])) {
      const loop = this.#pushLoopOf(id);
      if (loop) loop.wake();
      else farDeliveries.push(id);
    }
    const bySender = new Map<string, ReceiptRow[]>();
    for (const r of fx.receipts ?? []) {
      const rows = bySender.get(r.senderId);
      if (rows) rows.push(r);
      else bySender.set(r.senderId, [r]);
    }
    for (const [sender, rows] of bySender) {
      const pusher = this.#receiptPusherOf(sender);
      if (pusher) pusher.offer(rows.sort((a, b) => a.receiptId - b.receiptId));
      else farReceipts.push(sender);
    }
    if (this.remote !== null && farDeliveries.length + farReceipts.length > 0) {
      this.remote(farDeliveries, farReceipts);
    }
    // Notices for connections another node holds go there (issue 30); the rest are posted here.
    const far = (fx.revoked ?? []).filter((n) => n.connCode && !this.#app.conns.get(n.connCode));
    if (far.length > 0) this.remoteRevoked?.(far);
    this.#postRevoked(fx.revoked ?? []);
    // A revoked delivery has ended (dropped, expired, recalled), and so has every delivery a
    // receipt reports (e.g. expired by the cleanup loop): the message's frame may go.
    for (const n of fx.revoked ?? []) void this.#frames.release(n.from, n.msgId);
    if (fx.framesSettled) return;
    for (const r of fx.receipts ?? []) void this.#frames.release(r.senderId, r.msgId);
  }

  /**
   * Another node's `revoked` notices (issue 30): posts those owed to connections held here and
   * lets their frames go from this node's cache.
   */
  revokeLocal(notices: readonly RevokedNotice[]): void {
    if (this.#stopped) return;
    this.#postRevoked(notices);
    for (const n of notices) void this.#frames.release(n.from, n.msgId);
  }

  /** Posts the `revoked` frames owed to connections held here (best effort, spec 6.4). */
  #postRevoked(notices: readonly RevokedNotice[]): void {
    for (const n of notices) {
      const conn = n.connCode ? this.#app.conns.get(n.connCode) : undefined;
      if (!conn || !conn.handshaken) continue;
      // spec 6.4: best effort; the ack of a revoked delivery reports its final state anyway.
      this.#push.get(conn.code)?.acked(n.from, n.msgId);
      this.#mqtt.post(conn, revokedFrame(n), 1);
    }
  }

  /**
   * Another node (or the cluster poll) says these endpoints have work in the store: wake the push
   * loops and receipt pushers held here; ids not held here are ignored (issue 30).
   */
  wakeLocal(deliveries: readonly string[], receipts: readonly string[]): void {
    if (this.#stopped) return;
    for (const id of deliveries) this.#pushLoopOf(id)?.wake();
    for (const id of receipts) this.#receiptPusherOf(id)?.wake();
  }

  /** Bytes of encoded `msg` frames held for pushing. */
  get frameCacheBytes(): number {
    return this.#frames.bytes;
  }

  /** The recipient acked a delivery: free its window slot where it was pushed (spec 6.3). */
  acked(
    endpointId: string,
    from: string,
    id: string,
    pushedTo: string | null,
    completed: boolean,
    lentBy: string | null = null,
  ): void {
    const loop = (pushedTo ? this.#push.get(pushedTo) : undefined) ?? this.#pushLoopOf(endpointId);
    loop?.acked(from, id, loop.conn.code !== lentBy);
    // The last delivery of a message ended: drop its frame (a group's stays for the others).
    if (completed) this.#frames.completed(from, id);
  }

  lendClaim(connCode: string, from: string, id: string): ClaimTicket | null {
    return this.#stopped ? null : this.#push.get(connCode)?.lendClaim(from, id) ?? null;
  }

  /**
   * Lends the claim of `endpointId`'s current push loop to a `message.submit` to it (issue 33):
   * the submit then marks the new delivery in its own transaction. Null when the endpoint is
   * offline, or its loop is busy or full.
   */
  lendClaimTo(endpointId: string): ClaimTicket | null {
    return this.#stopped ? null : this.#pushLoopOf(endpointId)?.lendClaim("", "") ?? null;
  }

  prime(seq: number, msg: MsgFrameFields): void {
    if (!this.#stopped) this.#frames.prime(seq, msg);
  }

  /** The sender acked a receipt (spec 6.4). */
  receiptAcked(connCode: string, receiptId: number): void {
    this.#receipts.get(connCode)?.acked(receiptId);
  }

  scheduled(sendAt: number): void {
    if (this.#stopped) return;
    if (this.#dueAt !== null && this.#dueAt <= sendAt && this.#dueTimer) return;
    if (this.#dueTimer) clearTimeout(this.#dueTimer);
    this.#dueAt = sendAt;
    const wait = Math.min(Math.max(0, sendAt - this.#app.clock()), MAX_TIMER_MS);
    this.#dueTimer = setTimeout(() => {
      this.#dueTimer = null;
      this.#dueAt = null;
      this.#dispatchDue();
    }, wait);
  }

  /** Dispatches every due scheduled message (spec 7.4), then re-arms for the next one. */
  async #dispatchDue(): Promise<void> {
    // Another node holds the duties; the cluster poll arms this one again when it takes them.
    if (this.duties !== null && !this.duties()) return;
    if (this.#dispatching) {
      this.#dispatchAgain = true;
      return;
    }
    this.#dispatching = true;
    let next: number | null = null;
    try {
      do {
        this.#dispatchAgain = false;
        const now = this.#app.clock();
        const skip: number[] = [];
        for (const [seq, retry] of this.#dispatchRetries) {
          if (retry.at > now) skip.push(seq);
          else this.#dispatchRetries.delete(seq); // due again: tried in this run
        }
        for (;;) {
          const r = await this.#app.store.run("message.dispatch_due", {
            limit: DISPATCH_BATCH,
            skip,
          });
          this.apply({ wake: r.wake, receipts: r.receipts });
          for (const f of r.failed) {
            this.#dispatchFailed(f.seq, f.error);
            skip.push(f.seq);
          }
          next = r.nextDueAt;
          if (r.dispatched + r.failed.length < DISPATCH_BATCH || this.#stopped) break;
        }
      } while (this.#dispatchAgain && !this.#stopped);
    } catch (err) {
      this.#app.log.error("dispatch failed", { error: (err as Error).message });
      next = this.#app.clock() + 1000;
    } finally {
      this.#dispatching = false;
    }
    for (const retry of this.#dispatchRetries.values()) {
      if (next === null || retry.at < next) next = retry.at;
    }
    if (next !== null) this.scheduled(next);
  }

  /** One message failed to dispatch (rolled back alone): retry it later, backing off. */
  #dispatchFailed(seq: number, error: string): void {
    const prev = this.#dispatchRetries.get(seq);
    const wait = prev === undefined
      ? DISPATCH_RETRY_MS
      : Math.min(prev.wait * 2, DISPATCH_RETRY_MAX_MS);
    this.#dispatchRetries.set(seq, { at: this.#app.clock() + wait, wait });
    this.#app.log.error("dispatch of a message failed", { seq, error, retry_ms: wait });
  }

  async #cleanup(): Promise<void> {
    if (this.#cleaning || this.#stopped) return;
    if (this.duties !== null && !this.duties()) return;
    this.#cleaning = true;
    try {
      for (;;) {
        const r = await this.#app.store.run("delivery.expire", { limit: EXPIRE_BATCH });
        this.apply({ receipts: r.receipts });
        if (r.changed < EXPIRE_BATCH) break;
      }
    } catch (err) {
      this.#app.log.error("cleanup failed", { error: (err as Error).message });
    } finally {
      this.#cleaning = false;
    }
  }

  /**
   * Hourly deletion of old records, receipts, send keys and audit rows, then the store's own
   * follow-up (SQLite: a WAL truncate in the checkpointer) (spec 7.6).
   */
  async housekeeping(): Promise<
    { messages: number; receipts: number; keys: number; audit: number }
  > {
    const { config, store, log } = this.#app;
    const total = { messages: 0, receipts: 0, keys: 0, audit: 0 };
    if (this.duties !== null && !this.duties()) return total;
    try {
      let cursor: HousekeepingCursor | null = null;
      for (;;) {
        const r: HousekeepingResult = await store.run("housekeeping.run", {
          batch: HOUSEKEEPING_BATCH,
          recordRetentionMs: config.record_retention_days * DAY_MS,
          receiptRetentionMs: config.receipt_retention_days * DAY_MS,
          idempotencyMs: config.idempotency_hours * 3_600_000,
          cursor,
        });
        total.messages += r.deletedMessages;
        total.receipts += r.deletedReceipts;
        total.keys += r.deletedKeys;
        cursor = r.cursor;
        if (!r.more || this.#stopped) break;
      }
      const before = this.#app.clock() - config.audit_retention_days * DAY_MS;
      for (;;) {
        const r = await store.run("audit.prune", { before, batch: HOUSEKEEPING_BATCH });
        total.audit += r.deleted;
        if (!r.more || this.#stopped) break;
      }
      await store.afterHousekeeping();
      log.info("housekeeping", total);
    } catch (err) {
      log.error("housekeeping failed", { error: (err as Error).message });
    }
    return total;
  }

  #pushLoopOf(endpointId: string): PushLoop | undefined {
    const conn = this.#app.conns.current(endpointId);
    return conn ? this.#push.get(conn.code) : undefined;
  }

  #receiptPusherOf(endpointId: string): ReceiptPusher | undefined {
    const conn = this.#app.conns.current(endpointId);
    return conn ? this.#receipts.get(conn.code) : undefined;
  }

  #online(conn: Conn): void {
    if (this.#stopped || conn.closed) return;
    const loop = new PushLoop(conn, {
      app: this.#app,
      mqtt: this.#mqtt,
      bookkeeping: this.bookkeeping,
      frames: this.#frames,
      bigFrames: this.#bigFrames,
      apply: (fx) => this.apply(fx),
      observeDuePush: this.#obs.observeDuePush,
      observeAck: this.#obs.observeAck,
    });
    this.#push.set(conn.code, loop);
    const receipts = new ReceiptPusher(conn, this.#app, this.#mqtt);
    this.#receipts.set(conn.code, receipts);
    loop.wake();
    receipts.wake();
  }

  #offline(conn: Conn, _wasCurrent: boolean): void {
    this.#push.get(conn.code)?.stop();
    this.#push.delete(conn.code);
    this.#receipts.get(conn.code)?.stop();
    this.#receipts.delete(conn.code);
    // spec 7.5: the disconnect op cleared this code's marks; a newer connection re-pushes them.
    this.#pushLoopOf(conn.endpointId)?.wake();
  }
}
