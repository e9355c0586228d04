/**
 * The receiving rules of spec 9 ("接收") and spec 6.4 (`revoked`): dedup by from + id, serial
 * callbacks, acks in auto or manual mode, receipts deduped by `receipt_id` and acked.
 */
import { DedupCache, messageKey } from "./dedup.ts";
import { Listeners } from "./listeners.ts";
import type { GroupEvent, Message, PresenceEvent, Receipt, Revoked } from "./types.ts";

/** Where a received message stands. */
type MsgState = "queued" | "delivered" | "acked" | "revoked";

/** What the receiver needs from the client. */
export interface ReceiverHost {
  readonly ackMode: "auto" | "manual";
  readonly dedupCapacity: number;
  /**
   * Sends `ack` and resolves with `data.result`, or null when it could not be sent or answered
   * (the server pushes the message again and it is acked again then).
   */
  sendAck(from: string, id: string): Promise<string | null>;
  /** Sends `receipt_ack`, best effort. */
  sendReceiptAck(receiptId: string): void;
  onCallbackError(error: unknown): void;
}

/**
 * @example
 * ```ts
 * const receiver = new Receiver(host);
 * receiver.messages.add(async (msg) => console.log(msg.body));
 * receiver.message(msg); // delivered once, acked after the callback returns
 * ```
 */
export class Receiver {
  readonly messages = new Listeners<Message>();
  readonly receipts = new Listeners<Receipt>();
  readonly revoked = new Listeners<Revoked>();
  readonly presence = new Listeners<PresenceEvent>();
  readonly groupEvents = new Listeners<GroupEvent>();
  readonly #host: ReceiverHost;
  readonly #seen: DedupCache<MsgState>;
  readonly #receiptsSeen: DedupCache<"handling" | "done">;
  #chain: Promise<void> = Promise.resolve();
  #held: [Message, string][] = [];
  /** Set by {@link close}: nothing more reaches the application. */
  #closed = false;
  /** The message callback running now, until its ack is sent; null when none runs. */
  #delivering: Promise<void> | null = null;
  /** Depth of message callbacks running synchronously right now (a close from inside one). */
  #inCallback = 0;

  constructor(host: ReceiverHost) {
    this.#host = host;
    this.#seen = new DedupCache(host.dedupCapacity);
    this.#receiptsSeen = new DedupCache(host.dedupCapacity);
  }

  /** Resolves when every callback queued so far has run. */
  idle(): Promise<void> {
    return this.#chain;
  }

  /**
   * Stops handing anything to the application: messages and receipts still waiting for their
   * turn are dropped (unacked, so the server pushes them again at the next login).
   */
  close(): void {
    this.#closed = true;
    this.#held = [];
  }

  /**
   * Resolves once the message callback running now has returned and its automatic ack was
   * sent (at once when none runs). Called from inside a message callback, it does not wait for
   * that callback (it could not return first).
   */
  settled(): Promise<void> {
    if (this.#inCallback > 0 || this.#delivering === null) return Promise.resolve();
    return this.#delivering;
  }

  // Callbacks run one at a time, in arrival order (spec 9).
  #serial(task: () => void | Promise<void>): void {
    this.#chain = this.#chain.then(() => this.#closed ? undefined : task()).catch((err) =>
      this.#host.onCallbackError(err)
    );
  }

  /** A `msg` arrived (spec 6.3, 9). */
  message(msg: Message): void {
    const key = messageKey(msg.from, msg.id);
    const state = this.#seen.get(key);
    if (state === "acked") {
      // The earlier ack may have been lost; without a new one the server pushes forever.
      void this.#ack(msg);
      return;
    }
    if (state !== undefined) return; // queued, delivered but not acked, or revoked
    this.#seen.set(key, "queued");
    this.#enqueue(msg, key);
  }

  #enqueue(msg: Message, key: string): void {
    this.#serial(() => {
      if (this.#seen.get(key) === "revoked") return; // withdrawn before the app saw it
      if (this.messages.size === 0) {
        this.#hold(msg, key);
        return;
      }
      this.#seen.set(key, "delivered");
      const done = this.#deliver(msg, key);
      if (done === undefined) return;
      this.#delivering = done;
      return done.finally(() => {
        this.#delivering = null;
      });
    });
  }

  /**
   * Runs the message callbacks, then sends the automatic ack. A callback that returns no
   * promise is followed by its ack synchronously, before anything the callback queued (a
   * close, for example) runs; then the result is undefined.
   */
  #deliver(msg: Message, key: string): Promise<void> | undefined {
    let pending: void | Promise<void>;
    this.#inCallback++;
    try {
      pending = this.messages.run(msg);
    } catch (err) {
      this.#failed(key, err);
      return undefined;
    } finally {
      this.#inCallback--;
    }
    if (pending === undefined) {
      this.#handled(msg, key);
      return undefined;
    }
    return pending.then(
      () => this.#handled(msg, key),
      (err) => this.#failed(key, err),
    );
  }

  #handled(msg: Message, key: string): void {
    if (this.#host.ackMode === "auto" && this.#seen.get(key) === "delivered") {
      this.#seen.set(key, "acked");
      void this.#ack(msg);
    }
  }

  #failed(key: string, err: unknown): void {
    this.#host.onCallbackError(err);
    // No ack: forget it, so that the server's next push is processed again.
    if (this.#seen.get(key) === "delivered") this.#seen.delete(key);
  }

  // Without an onMessage callback, messages wait (unacked) without blocking other events.
  #hold(msg: Message, key: string): void {
    this.#held.push([msg, key]);
    if (this.#held.length > 1) return;
    void this.messages.whenAny().then(() => {
      const held = this.#held;
      this.#held = [];
      for (const [m, k] of held) this.#enqueue(m, k);
    });
  }

  /**
   * Acks a message the application has handled (manual mode). A message already revoked is not
   * acked. When the ack cannot be sent now, the next push of the message is acked at once.
   */
  async ack(msg: Pick<Message, "from" | "id">): Promise<void> {
    const key = messageKey(msg.from, msg.id);
    if (this.#seen.get(key) === "revoked") return;
    this.#seen.set(key, "acked");
    await this.#ack(msg);
  }

  async #ack(msg: Pick<Message, "from" | "id">): Promise<void> {
    const result = await this.#host.sendAck(msg.from, msg.id);
    // spec 9: an ack whose result is not `accepted` counts as `revoked`.
    if (result !== null && result !== "accepted") {
      const revoked: Revoked = { id: msg.id, from: msg.from, reason: result };
      this.#serial(() => this.revoked.run(revoked));
    }
  }

  /** A `revoked` frame arrived (spec 6.4). */
  revoke(frame: Revoked): void {
    const key = messageKey(frame.from, frame.id);
    const state = this.#seen.get(key);
    if (state === "queued") {
      this.#seen.set(key, "revoked"); // dropped when its turn comes
    } else if (state === "delivered") {
      this.#seen.set(key, "revoked"); // not acked any more; tell the application
      this.#serial(() => this.revoked.run(frame));
    }
    // acked, revoked or unknown: nothing to do.
  }

  /** A `receipt` arrived (spec 6.4): deduped by `receipt_id`, always acked. */
  receipt(r: Receipt): void {
    const state = this.#receiptsSeen.get(r.receiptId);
    if (state === "done") {
      this.#host.sendReceiptAck(r.receiptId);
      return;
    }
    if (state === "handling") return;
    this.#receiptsSeen.set(r.receiptId, "handling");
    this.#serial(async () => {
      try {
        await this.receipts.run(r);
      } catch (err) {
        this.#host.onCallbackError(err);
        this.#receiptsSeen.delete(r.receiptId);
        return;
      }
      this.#receiptsSeen.set(r.receiptId, "done");
      this.#host.sendReceiptAck(r.receiptId);
    });
  }

  /** A `presence` notice (spec 6.5), best effort, no ack. */
  presenceEvent(e: PresenceEvent): void {
    this.#serial(() => this.presence.run(e));
  }

  /** A `group_event` (spec 6.7), best effort, no ack. */
  groupEvent(e: GroupEvent): void {
    this.#serial(() => this.groupEvents.run(e));
  }
}
