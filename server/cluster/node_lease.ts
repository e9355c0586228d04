/**
 * A node's lease in the store (issue 30 item 3): while a cluster node runs, it renews its row of
 * `nodes` (`node.lease`) well before the lease runs out, so the other nodes and the console see it
 * alive; a clean stop gives the row up (`node.release`). When renewals fail until the lease has run
 * out, `onLost` fires once: the other nodes may then treat this one as dead, so it must stop
 * acting for the cluster. Not started by `serve` yet: cluster mode is not built.
 */
import type { Logger } from "../log/log.ts";
import type { Store } from "../store/store.ts";

/** Options of {@linkcode NodeLeaseKeeper.start}. */
export interface NodeLeaseOptions {
  readonly store: Pick<Store, "run">;
  /** `cluster.node_id`. */
  readonly nodeId: string;
  /** Where this node listens, `host:port`. */
  readonly address: string;
  readonly version: string;
  /** How long each lease lasts (ms); default {@linkcode DEFAULT_LEASE_MS}. */
  readonly leaseMs?: number;
  /** How often the lease is renewed (ms); default a third of `leaseMs`. */
  readonly renewMs?: number;
  /** MQTT connections this node holds now, written with each renewal (default none). */
  readonly connections?: () => number;
  /** Called once when the lease ran out without a renewal. */
  readonly onLost?: () => void;
  readonly log: Logger;
  readonly clock?: () => number;
}

/** A lease of 15 s renewed every 5 s: two renewals may fail before the lease runs out. */
export const DEFAULT_LEASE_MS = 15_000;

/** Holds and renews one node's lease. */
export class NodeLeaseKeeper {
  readonly #o: NodeLeaseOptions;
  readonly #leaseMs: number;
  readonly #clock: () => number;
  #leaseUntil = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight: Promise<void> = Promise.resolve();
  #stopped = false;
  #lost = false;

  private constructor(o: NodeLeaseOptions) {
    this.#o = o;
    this.#leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.#clock = o.clock ?? Date.now;
  }

  /**
   * Takes the first lease and starts renewing. Rejects (with the store's error) when the first
   * lease cannot be written: a node that cannot announce itself must not serve.
   *
   * @example
   * const lease = await NodeLeaseKeeper.start({ store, nodeId: "node-1", address, version, log });
   * await lease.stop();
   */
  static async start(o: NodeLeaseOptions): Promise<NodeLeaseKeeper> {
    const k = new NodeLeaseKeeper(o);
    await k.#renew();
    k.#schedule();
    return k;
  }

  /** Until when the last committed lease holds (Unix ms). */
  get leaseUntil(): number {
    return this.#leaseUntil;
  }

  /** True while the last committed lease has not run out. */
  get held(): boolean {
    return this.#clock() < this.#leaseUntil;
  }

  /** Stops renewing and releases the lease; a failure to release is logged, never thrown. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#inFlight;
    try {
      await this.#o.store.run("node.release", { nodeId: this.#o.nodeId });
    } catch (err) {
      this.#o.log.warn("Node lease not released; it runs out by itself", {
        node_id: this.#o.nodeId,
        error: (err as Error).message,
      });
    }
  }

  async #renew(): Promise<void> {
    const { store, nodeId, address, version } = this.#o;
    const connections = this.#o.connections?.() ?? 0;
    const r = await store.run("node.lease", {
      nodeId,
      address,
      version,
      leaseMs: this.#leaseMs,
      connections,
    });
    this.#leaseUntil = r.leaseUntil;
  }

  #schedule(): void {
    if (this.#stopped) return;
    const every = this.#o.renewMs ?? Math.max(1, Math.floor(this.#leaseMs / 3));
    this.#timer = setTimeout(() => {
      this.#inFlight = this.#renew().then(
        () => {
          if (this.#lost) {
            this.#lost = false;
            this.#o.log.info("Node lease taken again", { node_id: this.#o.nodeId });
          }
        },
        (err) => this.#failed(err as Error),
      ).finally(() => this.#schedule());
    }, every);
  }

  #failed(err: Error): void {
    if (this.#stopped) return;
    this.#o.log.warn("Node lease renewal failed", {
      node_id: this.#o.nodeId,
      error: err.message,
      lease_left_ms: Math.max(0, this.#leaseUntil - this.#clock()),
    });
    if (!this.#lost && !this.held) {
      this.#lost = true;
      this.#o.log.error("Node lease lost", { node_id: this.#o.nodeId });
      this.#o.onLost?.();
    }
  }
}
