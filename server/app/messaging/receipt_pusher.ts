import type { App } from "../app_context.ts";
import type { Conn } from "../connections.ts";
import type { MqttApp } from "../mqtt_app.ts";
import { pendingReceipts } from "../../store/queries/status.ts";
import { receiptFrame } from "./frames.ts";

const RETRY_MS = 1000;

/**
 * Pushes a sender's unacknowledged receipts to its handshaken connection in a window (spec 6.4:
 * default 64). Receipts are ordered by id; `receipt_ack` frees a slot. Receipts not acked on this
 * connection are sent again on the next one (the SDK dedups by receipt_id).
 */
export class ReceiptPusher {
  readonly conn: Conn;
  #app: App;
  #mqtt: MqttApp;
  #inflight = new Set<number>();
  /** The highest receipt id published on this connection. */
  #sentUpTo = 0;
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
    this.#run();
  }

  /** The sender acknowledged a receipt (spec 6.4 receipt_ack). */
  acked(receiptId: number): void {
    if (this.#inflight.delete(receiptId)) this.wake();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
  }

  #run(): void {
    this.#running = true;
    try {
      do {
        this.#again = false;
        const room = this.#app.config.limits.receipt_window - this.#inflight.size;
        if (room <= 0 || this.#stopped) break;
        const rows = pendingReceipts(this.#app.reader, this.conn.endpointId, this.#sentUpTo, room);
        for (const r of rows) {
          this.#inflight.add(r.receiptId);
          this.#sentUpTo = Math.max(this.#sentUpTo, r.receiptId);
          this.#mqtt.publish(this.conn, receiptFrame(r), 1).then((outcome) => {
            if (outcome !== "dropped" || this.#stopped) return;
            // Dropped: send it again from here after a pause (spec 7.5 step 4 by analogy).
            this.#inflight.delete(r.receiptId);
            this.#sentUpTo = Math.min(this.#sentUpTo, r.receiptId - 1);
            this.#retryLater();
          });
        }
        if (rows.length === room) this.#again = true;
      } while (this.#again && !this.#stopped);
    } catch (err) {
      this.#app.log.error("receipt push failed", { error: (err as Error).message });
      this.#retryLater();
    } finally {
      this.#running = false;
    }
  }

  #retryLater(): void {
    if (this.#retry || this.#stopped) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.wake();
    }, RETRY_MS);
  }
}
