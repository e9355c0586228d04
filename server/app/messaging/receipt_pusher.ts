import type { App } from "../app_context.ts";
import type { Conn } from "../connections.ts";
import type { MqttApp } from "../mqtt_app.ts";
import type { ReceiptRow } from "../../store/ops/receipts.ts";
import { receiptFrame } from "./frames.ts";

const RETRY_MS = 1000;

/**
 * Pushes a sender's unacknowledged receipts to its handshaken connection in a window (spec 6.4:
 * default 64). Receipts are ordered by id; `receipt_ack` frees a slot. Receipts not acked on this
 * connection are sent again on the next one (the SDK dedups by receipt_id).
 *
 * Receipts are read from the database on connect and whenever the pusher may be behind (its
 * window was full, a publish was dropped, a read failed). Once a read has returned everything
 * pending it is "caught up": receipts written later arrive from the committing op's effects
 * ({@link ReceiptPusher.offer}) and go out without another read, which is what a busy sender
 * meets on every message.
 */
export class ReceiptPusher {
  readonly conn: Conn;
  #app: App;
  #mqtt: MqttApp;
  #inflight = new Set<number>();
  /** Read cursor: every receipt up to here was published on this connection or is acked. */
  #sentUpTo = 0;
  /** The highest receipt id a read returned: an offered receipt at or below it was read too. */
  #readUpTo = 0;
  /** The last read saw every pending receipt, so offered rows can be pushed without a read. */
  #caughtUp = false;
  #running = false;
  #again = false;
  #stopped = false;
  #retry: ReturnType<typeof setTimeout> | null = null;

  constructor(conn: Conn, app: App, mqtt: MqttApp) {
    this.conn = conn;
    this.#app = app;
    this.#mqtt = mqtt;
  }

  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    void this.#run();
  }

  /**
   * Receipts of this sender that an op has just committed. Pushed straight away while the
   * pusher is caught up and has room; otherwise they are left to the next read.
   */
  offer(rows: readonly ReceiptRow[]): void {
    if (this.#stopped) return;
    if (!this.#caughtUp) {
      this.wake();
      return;
    }
    const window = this.#app.config.limits.receipt_window;
    for (const r of rows) {
      if (r.receiptId <= this.#readUpTo || this.#inflight.has(r.receiptId)) continue;
      if (this.#inflight.size >= window) {
        // The window is full: this row and later ones are read once a receipt_ack frees a slot.
        this.#caughtUp = false;
        this.#sentUpTo = Math.min(this.#sentUpTo, r.receiptId - 1);
        return;
      }
      this.#publish(r);
    }
  }

  /** The sender acknowledged a receipt (spec 6.4 receipt_ack). */
  acked(receiptId: number): void {
    if (this.#inflight.delete(receiptId) && !this.#caughtUp) this.wake();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
  }

  async #run(): Promise<void> {
    this.#running = true;
    const window = this.#app.config.limits.receipt_window;
    try {
      do {
        this.#again = false;
        const room = window - this.#inflight.size;
        if (room <= 0 || this.#stopped) break;
        const rows = await this.#app.store.query("receipt.pending", {
          senderId: this.conn.endpointId,
          afterReceiptId: this.#sentUpTo,
          limit: room,
        });
        if (this.#stopped) break;
        let full = false;
        for (const r of rows) {
          if (this.#inflight.has(r.receiptId)) {
            this.#sentUpTo = Math.max(this.#sentUpTo, r.receiptId);
            this.#readUpTo = Math.max(this.#readUpTo, r.receiptId);
            continue;
          }
          // Offered receipts may have taken slots while the read was on its way.
          if (this.#inflight.size >= window) {
            full = true;
            break;
          }
          this.#sentUpTo = Math.max(this.#sentUpTo, r.receiptId);
          this.#readUpTo = Math.max(this.#readUpTo, r.receiptId);
          this.#publish(r);
        }
        // A short page means nothing else is pending: later receipts come through offer().
        this.#caughtUp = !full && rows.length < room;
        if (rows.length === room && !full) this.#again = true;
      } while (this.#again && !this.#stopped);
    } catch (err) {
      this.#caughtUp = false;
      this.#app.log.error("receipt push failed", { error: (err as Error).message });
      this.#retryLater();
    } finally {
      this.#running = false;
    }
  }

  #publish(r: ReceiptRow): void {
    this.#inflight.add(r.receiptId);
    this.#sentUpTo = Math.max(this.#sentUpTo, r.receiptId);
    this.#mqtt.publish(this.conn, receiptFrame(r), 1).then((outcome) => {
      if (outcome !== "dropped" || this.#stopped) return;
      // Dropped: send it again from here after a pause (spec 7.5 step 4 by analogy).
      this.#inflight.delete(r.receiptId);
      this.#caughtUp = false;
      this.#sentUpTo = Math.min(this.#sentUpTo, r.receiptId - 1);
      this.#retryLater();
    });
  }

  #retryLater(): void {
    if (this.#retry || this.#stopped) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.wake();
    }, RETRY_MS);
  }
}
