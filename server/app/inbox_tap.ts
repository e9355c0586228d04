/**
 * The live inbox's tap (issue 32): a {@link Broker} wrapper that shows every downlink frame of an
 * endpoint to the admin streams watching it. It only looks: the frame goes to the device exactly
 * as before, and nothing here acks, claims or consumes (the delivery stays the device's). With no
 * watcher the cost per downlink is one map lookup.
 */
import type { Broker, PublishOutcome } from "../broker/types.ts";
import type { ConnectionTable } from "./connections.ts";

/** One downlink, or the endpoint coming online or going offline, as a watcher sees it. */
export type TappedEvent =
  | {
    readonly kind: "frame";
    /** The clock when the server handed it to the broker. */
    readonly at: number;
    readonly qos: 0 | 1;
    /** The frame exactly as sent (spec 6 JSON); the watcher decides what to show. */
    readonly payload: Uint8Array;
  }
  | { readonly kind: "state"; readonly at: number; readonly online: boolean };

/** Receives the events of one endpoint. */
export type FrameWatcher = (event: TappedEvent) => void;

/** Fans an endpoint's downlinks out to its watchers. */
export class InboxTap {
  readonly #conns: ConnectionTable;
  readonly #clock: () => number;
  readonly #watchers = new Map<string, Set<FrameWatcher>>();

  constructor(conns: ConnectionTable, clock: () => number = Date.now) {
    this.#conns = conns;
    this.#clock = clock;
  }

  /** Watches `endpointId`'s downlinks until the returned function is called. */
  watch(endpointId: string, watcher: FrameWatcher): () => void {
    let set = this.#watchers.get(endpointId);
    if (set === undefined) this.#watchers.set(endpointId, set = new Set());
    set.add(watcher);
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.#watchers.get(endpointId) === set) {
        this.#watchers.delete(endpointId);
      }
    };
  }

  /** How many watchers there are now, over every endpoint. */
  get watchers(): number {
    let n = 0;
    for (const set of this.#watchers.values()) n += set.size;
    return n;
  }

  /** Tells the endpoint's watchers that it came online (hello answered) or went offline. */
  connState(endpointId: string, online: boolean): void {
    const set = this.#watchers.get(endpointId);
    if (set === undefined) return;
    const event: TappedEvent = { kind: "state", at: this.#clock(), online };
    for (const w of [...set]) w(event);
  }

  /** `broker` with publish and post shown to the watchers of the connection's endpoint. */
  wrap(broker: Broker): Broker {
    const show = (connCode: string, payload: Uint8Array, qos: 0 | 1) => {
      if (this.#watchers.size === 0) return;
      const conn = this.#conns.get(connCode);
      if (conn === undefined) return;
      const set = this.#watchers.get(conn.endpointId);
      if (set === undefined) return;
      const frame: TappedEvent = { kind: "frame", at: this.#clock(), qos, payload };
      for (const w of [...set]) w(frame);
    };
    return {
      handle: (conn) => broker.handle(conn),
      publish: (connCode, payload, qos): Promise<PublishOutcome> => {
        show(connCode, payload, qos);
        return broker.publish(connCode, payload, qos);
      },
      post: (connCode, payload, qos) => {
        show(connCode, payload, qos);
        broker.post(connCode, payload, qos);
      },
      disconnect: (connCode, reasonCode) => broker.disconnect(connCode, reasonCode),
      clientCount: (transport) => broker.clientCount(transport),
      close: () => broker.close(),
    };
  }
}
