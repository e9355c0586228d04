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

/** What a lent claim brought back. */
interface Lent {
  readonly claimed: readonly ClaimedDelivery[];
  readonly limit: number;
  readonly failed: boolean;
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
 * the freed window takes, in the same transaction (issue 19). While it is out the loop claims
 * nothing itself, so claims stay one at a time and pushes keep their order (spec 7.5).
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
 */
export class PushLoop {
  readonly conn: Conn;
  #d: PushDeps;
  #inflight = new Map<string, Inflight>();
  #running = false;
  #again = false;
  #stopped = false;
  #retry: ReturnType<typeof setTimeout> | null = null;
  /** Fires at the earliest ack deadline (`#timerAt`) of the pushes in flight, if any. */
  #timer: ReturnType<typeof setTimeout> | null = null;
  #timerAt = 0;
  /**
   * Deliveries acked while the loop claims or pushes, before their push started: a claim and an
   * ack of the same delivery can commit in one batch, and the ack's answer can go out before the
   * loop reaches that delivery (on PostgreSQL each frame read awaits the database). They are never
   * published after that answer. Cleared when the loop rests.
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
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#run();
  }

  /**
   * The recipient acked `from`/`id`, on whichever connection (spec 6.3). `refill` false: the
   * ack op already claimed into the freed slot (a lent claim), so there is nothing to look for.
   */
  acked(from: string, id: string, refill = true): void {
    const f = this.#inflight.get(key(from, id));
    if (!f) {
      if (this.#running) this.#ackedEarly.add(key(from, id));
      return;
    }
    this.#d.observeAck?.(Math.max(0, this.#d.app.clock() - f.pushedAt));
    this.#finish(f);
    if (refill) this.wake();
  }

  /**
   * Lends the claim to the ack of `from`/`id` on this connection. Null while the loop claims or
   * pushes itself, or when the window has no room even after that ack.
   */
  lendClaim(from: string, id: string): ClaimTicket | null {
    if (this.#stopped || this.conn.closed || this.#running) return null;
    const freeing = this.#inflight.has(key(from, id)) ? 1 : 0;
    const limit = this.#d.app.config.limits.delivery_window - this.#inflight.size + freeing;
    if (limit <= 0) return null;
    this.#running = true;
    let settled = false;
    return {
      connCode: this.conn.code,
      limit,
      done: (claimed) => {
        if (settled) return;
        settled = true;
        void this.#run({ claimed: claimed ?? [], limit, failed: claimed === null });
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

  #finish(f: Inflight): void {
    f.deadline = 0;
    if (f.bigSlot) {
      f.bigSlot = false;
      this.#d.bigFrames.release();
    }
    this.#inflight.delete(key(f.claim.senderId, f.claim.msgId));
    if (this.#inflight.size === 0 && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  async #run(lent: Lent | null = null): Promise<void> {
    this.#running = true;
    const { app } = this.#d;
    try {
      if (lent !== null) {
        for (const c of lent.claimed) {
          crashPoint("after_mark");
          await this.#pushOne(c);
        }
        // A short claim took everything pending; unless woken meanwhile, the loop rests. A full
        // one may have left some, and a failed op claimed nothing: look again.
        if (lent.claimed.length < lent.limit && !lent.failed && !this.#again) return;
        this.#again = true;
      }
      do {
        this.#again = false;
        while (!this.#stopped && !this.conn.closed) {
          const room = app.config.limits.delivery_window - this.#inflight.size;
          if (room <= 0) break;
          const { claimed } = await app.store.run("delivery.claim", {
            endpointId: this.conn.endpointId,
            connCode: this.conn.code,
            limit: room,
          });
          for (const c of claimed) {
            crashPoint("after_mark");
            await this.#pushOne(c);
          }
          // A short claim took everything pending then; a wake since sets #again.
          if (claimed.length < room) break;
        }
      } while (this.#again && !this.#stopped);
    } catch (err) {
      app.log.error("push failed", { conn: this.conn.code, error: (err as Error).message });
      this.#scheduleRetry();
    } finally {
      this.#running = false;
      this.#ackedEarly.clear();
    }
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
