import type { App } from "../app_context.ts";
import { crashPoint } from "../../config/crash_point.ts";
import type { Conn } from "../connections.ts";
import type { MqttApp } from "../mqtt_app.ts";
import type { ClaimedDelivery } from "../../store/ops/deliveries.ts";
import type { Bookkeeping } from "./bookkeeping.ts";
import type { Effects } from "./effects.ts";
import type { MsgFrameCache } from "./frames.ts";
import type { Semaphore } from "./semaphore.ts";

/** spec 7.5: frames over 64 KiB count against the server-wide big-frame limit. */
export const BIG_FRAME_BYTES = 64 * 1024;
/** spec 7.5 step 4: a dropped publish is retried after 1 s. */
const RETRY_MS = 1000;

/**
 * One claim of this loop's connection queued to the writer: the loop's own `delivery.claim`, or
 * one lent to an `ack` or a `send` (the op also claims, in its transaction). Claims are handled
 * in the order they were queued, which is the order the writer commits them in.
 */
interface Claim {
  /** The most deliveries it may claim: window slots reserved for it until it is handled. */
  readonly limit: number;
  readonly own: boolean;
  /** The ack that lent it frees this in-flight slot when it commits; null otherwise. */
  readonly freeing: string | null;
  /** undefined while queued; null when the op failed (nothing marked). */
  claimed: readonly ClaimedDelivery[] | null | undefined;
}

interface Inflight {
  readonly claim: ClaimedDelivery;
  /** When it was published; the ack latency is measured from here (spec 4.3). */
  pushedAt: number;
  /** `performance.now()` when its ack timeout fires; 0 until it is published. */
  deadline: number;
  bigSlot: boolean;
}

/** What a push loop needs from the messaging runtime. */
export interface PushDeps {
  readonly app: App;
  readonly mqtt: MqttApp;
  readonly bookkeeping: Bookkeeping;
  readonly frames: MsgFrameCache;
  readonly bigFrames: Semaphore;
  apply(fx: Effects): void;
  observeDuePush?(ms: number): void;
  observeAck?(ms: number): void;
}

/**
 * The push loop's claim, lent to the `ack` of one of its deliveries: the ack op also claims what
 * the freed window takes, in the same transaction (issue 19); or to a submit to its endpoint
 * (issue 33). The op must be queued in the same turn the ticket is taken, so that claims reach
 * the writer in the order the loop handles them (spec 7.5: pushes keep their order).
 */
export interface ClaimTicket {
  readonly connCode: string;
  /** The most deliveries the op may claim. */
  readonly limit: number;
  /** Call exactly once: with what the committed op claimed, or null when the op failed. */
  done(claimed: readonly ClaimedDelivery[] | null): void;
}

function key(from: string, id: string): string {
  return `${from}\u0000${id}`;
}

/**
 * One push loop per handshaken connection (spec 7.5): claims up to the window of pending
 * deliveries (the conditional mark is committed before publishing), publishes them QoS 1, and
 * keeps an in-memory ack deadline per pushed delivery, watched by one timer per loop (a timer per
 * push cost a timer set and cleared per message, issue 19).
 *
 * Claims are pipelined (issue 33): every ack may lend a claim for the slot it frees while earlier
 * claims are still queued, so a full window refills with each ack's own commit instead of waiting
 * for the claim before it. The window stays exact: a queued claim reserves `limit` slots until it
 * is handled. Pushes keep their order: the writer commits claims in the order they were queued
 * (both stores queue synchronously in `run`, and a claim is queued in the same turn it is made),
 * each claim marks the oldest unmarked deliveries at its commit, and the loop handles the claims
 * strictly in that order, pushing each claim's deliveries before the next claim's.
 */
export class PushLoop {
  readonly conn: Conn;
  #d: PushDeps;
  #inflight = new Map<string, Inflight>();
  /** Claims queued to the writer and not yet handled, in queue order. */
  #claims: Claim[] = [];
  /** Window slots held by `#claims`. */
  #reserved = 0;
  /** Keys in `#inflight` whose ack is committing with a lent claim that counts their slot. */
  #freeing = new Set<string>();
  /** The loop's own `delivery.claim` is queued. */
  #ownOut = false;
  /** Something may be pending that no queued claim will see: claim when there is room. */
  #wanted = false;
  /** Handling claims in order (pushes may await a frame read). */
  #draining = false;
  #stopped = false;
  #retry: ReturnType<typeof setTimeout> | null = null;
  /** Fires at the earliest ack deadline (`#timerAt`) of the pushes in flight, if any. */
  #timer: ReturnType<typeof setTimeout> | null = null;
  #timerAt = 0;
  /**
   * Deliveries acked while claims are queued or handled, before their push started: a claim and
   * an ack of the same delivery can commit in one batch, and the ack's answer can go out before
   * the loop reaches that delivery (on PostgreSQL each frame read awaits the database). They are
   * never published after that answer. Cleared when the loop rests.
   */
  #ackedEarly = new Set<string>();

  constructor(conn: Conn, deps: PushDeps) {
    this.conn = conn;
    this.#d = deps;
  }

  /** Pushed but not yet acked on this connection. */
  get inflight(): number {
    return this.#inflight.size;
  }

  /** Asks the loop to look for pushable deliveries. Cheap to call often. */
  wake(): void {
    if (this.#stopped) return;
    this.#wanted = true;
    this.#pump();
  }

  /**
   * The recipient acked `from`/`id`, on whichever connection (spec 6.3). `refill` false: the
   * ack op already claimed into the freed slot (a lent claim), so there is nothing to look for.
   */
  acked(from: string, id: string, refill = true): void {
    const f = this.#inflight.get(key(from, id));
    if (!f) {
      if (this.#busy) this.#ackedEarly.add(key(from, id));
      return;
    }
    this.#d.observeAck?.(Math.max(0, this.#d.app.clock() - f.pushedAt));
    this.#finish(f);
    if (refill) this.wake();
  }

  /**
   * Lends a claim to the ack of `from`/`id` on this connection (or, with empty ones, to a
   * submit to this endpoint), to be queued in the same turn. Null when the window has no room
   * even after that ack.
   */
  lendClaim(from: string, id: string): ClaimTicket | null {
    if (this.#stopped || this.conn.closed) return null;
    const k = key(from, id);
    const freeing = this.#inflight.has(k) && !this.#freeing.has(k) ? k : null;
    const limit = this.#room() + (freeing === null ? 0 : 1);
    if (limit <= 0) return null;
    if (freeing !== null) this.#freeing.add(freeing);
    const claim = this.#queue(limit, false, freeing);
    return {
      connCode: this.conn.code,
      limit,
      done: (claimed) => {
        if (claim.claimed !== undefined) return;
        this.#settle(claim, claimed);
      },
    };
  }

  /** The connection is gone: drop timers and slots (the disconnect op clears the marks). */
  stop(): void {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    for (const f of [...this.#inflight.values()]) this.#finish(f);
  }

  get #busy(): boolean {
    return this.#claims.length > 0 || this.#draining;
  }

  /** Free window slots: neither in flight (except those an ack is freeing) nor reserved. */
  #room(): number {
    return this.#d.app.config.limits.delivery_window -
      (this.#inflight.size - this.#freeing.size) - this.#reserved;
  }

  #queue(limit: number, own: boolean, freeing: string | null): Claim {
    const claim: Claim = { limit, own, freeing, claimed: undefined };
    this.#claims.push(claim);
    this.#reserved += limit;
    return claim;
  }

  #finish(f: Inflight): void {
    f.deadline = 0;
    if (f.bigSlot) {
      f.bigSlot = false;
      this.#d.bigFrames.release();
    }
    const k = key(f.claim.senderId, f.claim.msgId);
    this.#inflight.delete(k);
    this.#freeing.delete(k);
    if (this.#inflight.size === 0 && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  /** Queues the loop's own claim for the free room, unless one is queued already. */
  #pump(): void {
    if (this.#stopped || this.conn.closed || this.#ownOut || !this.#wanted) return;
    const room = this.#room();
    if (room <= 0) return; // a freed slot wakes the loop or claims itself
    this.#wanted = false;
    this.#ownOut = true;
    const claim = this.#queue(room, true, null);
    this.#d.app.store.run("delivery.claim", {
      endpointId: this.conn.endpointId,
      connCode: this.conn.code,
      limit: room,
    }).then(
      (r) => this.#settle(claim, r.claimed),
      (err) => {
        this.#d.app.log.error("push failed", {
          conn: this.conn.code,
          error: (err as Error).message,
        });
        this.#settle(claim, null);
      },
    );
  }

  /** A claim's op settled: handle every claim at the head of the queue that has. */
  #settle(claim: Claim, claimed: readonly ClaimedDelivery[] | null): void {
    claim.claimed = claimed;
    if (claim.freeing !== null) this.#freeing.delete(claim.freeing);
    if (claim.own) this.#ownOut = false;
    void this.#drain();
  }

  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#claims.length > 0 && this.#claims[0].claimed !== undefined) {
        const claim = this.#claims.shift()!;
        const claimed = claim.claimed ?? [];
        let held = claim.limit;
        try {
          for (const c of claimed) {
            // Its slot passes from the reservation to the in-flight map as the push starts.
            held--;
            this.#reserved--;
            crashPoint("after_mark");
            await this.#pushOne(c);
          }
        } catch (err) {
          this.#d.app.log.error("push failed", {
            conn: this.conn.code,
            error: (err as Error).message,
          });
          this.#scheduleRetry();
        } finally {
          this.#reserved -= held;
        }
        if (claim.claimed === null) {
          // The op failed and marked nothing: look again, after a pause if it was our own.
          if (claim.own) this.#scheduleRetry();
          else this.#wanted = true;
        } else if (claimed.length >= claim.limit) {
          this.#wanted = true; // a full claim may have left some
        }
      }
    } finally {
      this.#draining = false;
    }
    if (this.#claims.length === 0) this.#ackedEarly.clear();
    this.#pump();
  }

  #scheduleRetry(): void {
    if (this.#stopped || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.wake();
    }, RETRY_MS);
  }

  async #pushOne(c: ClaimedDelivery): Promise<void> {
    const { app, mqtt, frames, bigFrames } = this.#d;
    const ref = { seq: c.seq, endpointId: this.conn.endpointId, connCode: this.conn.code };
    // In flight from the claim on (deadline 0: not yet watched), so that an ack committed while
    // the frame is read (the client got the message on an earlier connection and acks it again)
    // finishes it here and it is never published after that ack was answered.
    const k = key(c.senderId, c.msgId);
    if (this.#ackedEarly.delete(k)) return; // acked since the claim: the client has it
    const f: Inflight = { claim: c, pushedAt: app.clock(), deadline: 0, bigSlot: false };
    this.#inflight.set(k, f);
    // A cached frame is pushed without waiting; only a miss reads the store.
    const bytes = frames.cached(c) ?? await frames.get(c);
    if (this.#inflight.get(k) !== f) return; // acked (or the loop stopped) during the read
    if (bytes === null) {
      // The message finished between claim and read (e.g. recalled); release the mark.
      this.#finish(f);
      this.#unmark(ref);
      return;
    }
    const limit = mqtt.frameLimit(this.conn);
    if (limit !== null && bytes.length > limit) {
      // spec 7.5 step 2: too large for this connection -> rejected, never published.
      this.#finish(f);
      this.#d.bookkeeping.commit("delivery.reject_too_large", () => ref, {
        fields: { conn: ref.connCode, seq: ref.seq },
        onCommitted: (r) => this.#d.apply({ receipts: r.receipts }),
      });
      return;
    }
    if (bytes.length > BIG_FRAME_BYTES) {
      await bigFrames.acquire();
      f.bigSlot = true;
      if (this.#stopped || this.#inflight.get(k) !== f) {
        bigFrames.release();
        f.bigSlot = false;
        return;
      }
    }
    f.deadline = performance.now() + app.config.limits.ack_timeout_seconds * 1000;
    this.#watch(f.deadline);
    f.pushedAt = app.clock();
    this.#d.observeDuePush?.(Math.max(0, f.pushedAt - c.sendAt));
    mqtt.publish(this.conn, bytes, 1).then((outcome) => {
      if (outcome === "acked") crashPoint("after_publish");
      if (f.bigSlot) {
        f.bigSlot = false; // spec 7.5: the big-frame slot is freed on PUBACK
        bigFrames.release();
      }
      if (outcome === "dropped" && this.#inflight.get(key(c.senderId, c.msgId)) === f) {
        this.#finish(f);
        this.#unmark(ref);
        this.#scheduleRetry();
      }
    });
  }

  /** Makes sure the loop's timer fires by `deadline`. */
  #watch(deadline: number): void {
    if (this.#stopped || (this.#timer && this.#timerAt <= deadline)) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = deadline;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, deadline - performance.now()));
  }

  /** The timer fired: every push past its deadline times out; watch the next deadline. */
  #expire(): void {
    this.#timer = null;
    // Timers may fire up to a millisecond early against performance.now().
    const now = performance.now() + 1;
    let next = Infinity;
    for (const f of [...this.#inflight.values()]) {
      if (f.deadline === 0) continue;
      if (f.deadline <= now) this.#ackTimeout(f);
      else next = Math.min(next, f.deadline);
    }
    if (next !== Infinity) this.#watch(next);
  }

  /** spec 7.5 step 4: clears this connection's mark so the delivery is pushed again. */
  #unmark(ref: { seq: number; endpointId: string; connCode: string }): void {
    this.#d.bookkeeping.commit("delivery.unmark", () => ref, {
      fields: { conn: ref.connCode, seq: ref.seq },
      onCommitted: (r) => {
        if (r.cleared) this.wake();
      },
    });
  }

  /**
   * spec 7.5 step 5. Committed until it succeeds: a lost ack timeout would leave the delivery
   * marked as pushed to this connection, so it would neither be pushed again nor dropped.
   */
  #ackTimeout(f: Inflight): void {
    if (this.#inflight.get(key(f.claim.senderId, f.claim.msgId)) !== f) return;
    this.#finish(f);
    const ref = { seq: f.claim.seq, endpointId: this.conn.endpointId, connCode: this.conn.code };
    this.#d.bookkeeping.commit("delivery.ack_timeout", () => ref, {
      fields: { conn: ref.connCode, seq: ref.seq },
      onCommitted: (r) => {
        const fx: Effects = r.outcome === "dropped" || r.outcome === "expired"
          ? {
            receipts: r.receipts,
            revoked: [{
              endpointId: ref.endpointId,
              connCode: ref.connCode,
              msgId: f.claim.msgId,
              from: f.claim.senderId,
              reason: r.outcome,
            }],
          }
          : { receipts: r.receipts };
        this.#d.apply(fx);
        this.wake();
      },
    });
    this.wake();
  }
}
