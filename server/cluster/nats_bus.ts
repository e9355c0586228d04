/**
 * The cluster's notifier (issue 30): one NATS connection per node, for wake-ups and login
 * announcements. NATS is never the source of truth: a message lost while NATS is down or
 * reconnecting only delays work until the node's poll of the store (`cluster_node.ts`).
 *
 * The connection is made in the background and retried without end, so a node starts and serves
 * (by polling) while NATS is down. Subscriptions are made on the client once, before the first
 * connect completes; the client renews them on every reconnect. Publishing while not connected is
 * dropped, never buffered without bound.
 */
import {
  connect,
  credsAuthenticator,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import type { Logger } from "../log/log.ts";
import { redactUrl } from "../config/config.ts";

/** Options of {@linkcode NatsBus.open}. */
export interface NatsBusOptions {
  /** `cluster.nats_url`: one or more `nats://` / `tls://` URLs, comma-separated. */
  readonly url: string;
  /** `cluster.nats_token` ("" for none). A secret: never logged. */
  readonly token: string;
  /** The content of the `cluster.nats_credentials` `.creds` file, or null for none. */
  readonly credentials: Uint8Array | null;
  /** The client name NATS shows (the node id). */
  readonly name: string;
  readonly log: Logger;
  /** Wait between reconnect attempts (ms); default 1000. */
  readonly reconnectWaitMs?: number;
}

/** A handler of one subject's messages; gets the decoded JSON value. */
export type BusHandler = (value: unknown) => void;

/** How long `close` waits for the client to drain. */
const CLOSE_WAIT_MS = 2000;

/** The node's NATS connection. */
export class NatsBus {
  readonly #o: NatsBusOptions;
  #nc: NatsConnection | null = null;
  #handlers = new Map<string, BusHandler>();
  #closed = false;
  #up = false;
  #published = 0;
  #dropped = 0;
  #listeners = new Set<(connected: boolean) => void>();

  private constructor(o: NatsBusOptions) {
    this.#o = o;
  }

  /**
   * Starts connecting in the background and returns at once; `handlers` (subject → handler) are
   * subscribed as soon as the first connection is up.
   *
   * @example
   * const bus = NatsBus.open({ url, token: "", credentials: null, name: "node-1", log }, {
   *   "nixmsg.wake": (v) => console.log(v),
   * });
   * bus.publish("nixmsg.wake", { d: ["b"] });
   * await bus.close();
   */
  static open(o: NatsBusOptions, handlers: Record<string, BusHandler>): NatsBus {
    const bus = new NatsBus(o);
    for (const [subject, fn] of Object.entries(handlers)) bus.#handlers.set(subject, fn);
    bus.#connect().catch((err) =>
      o.log.error("NATS connection given up", { error: (err as Error).message })
    );
    return bus;
  }

  /** True while connected to a NATS server. */
  get connected(): boolean {
    return this.#up && !this.#closed;
  }

  /** Calls `fn` whenever the connection comes up or goes down; returns its removal. */
  onStatus(fn: (connected: boolean) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #setUp(up: boolean): void {
    this.#up = up;
    for (const fn of [...this.#listeners]) fn(up);
  }

  /** Messages handed to NATS, and messages dropped because NATS was not connected. */
  get counts(): { published: number; dropped: number } {
    return { published: this.#published, dropped: this.#dropped };
  }

  /** Publishes `value` as JSON; dropped (and counted) while not connected. Never throws. */
  publish(subject: string, value: unknown): void {
    const nc = this.#nc;
    if (nc === null || !this.#up || this.#closed) {
      this.#dropped++;
      return;
    }
    try {
      nc.publish(subject, new TextEncoder().encode(JSON.stringify(value)));
      this.#published++;
    } catch {
      this.#dropped++;
    }
  }

  /** Unsubscribes and closes the connection (bounded); a connect still under way is given up. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const nc = this.#nc;
    if (nc === null) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      nc.drain().catch(() => nc.close()),
      new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    if (!nc.isClosed()) await nc.close().catch(() => {});
  }

  async #connect(): Promise<void> {
    const { log } = this.#o;
    const shown = this.#o.url.split(",").map((u) => redactUrl(u.trim())).join(",");
    const authenticator = this.#o.credentials !== null
      ? credsAuthenticator(this.#o.credentials)
      : undefined;
    let attempt = 0;
    while (!this.#closed) {
      attempt++;
      try {
        const nc = await connect({
          servers: this.#o.url.split(",").map((u) => u.trim()),
          name: this.#o.name,
          ...(this.#o.token !== "" ? { token: this.#o.token } : {}),
          ...(authenticator ? { authenticator } : {}),
          maxReconnectAttempts: -1,
          reconnectTimeWait: this.#o.reconnectWaitMs ?? 1000,
          pingInterval: 5000,
          maxPingOut: 2,
        });
        if (this.#closed) {
          await nc.close();
          return;
        }
        this.#nc = nc;
        for (const [subject, fn] of this.#handlers) this.#subscribe(nc, subject, fn);
        // The server has the subscriptions once this round trip is back.
        await nc.flush();
        this.#setUp(true);
        log.info("NATS connected", { url: shown, attempts: attempt });
        this.#watch(nc).catch((err) =>
          log.warn("NATS status watch ended", { error: (err as Error).message })
        );
        return;
      } catch (err) {
        if (attempt === 1 || attempt % 30 === 0) {
          log.warn("NATS unreachable, retrying; deliveries wait for the store poll", {
            url: shown,
            attempt,
            error: (err as Error).message,
          });
        }
        await new Promise((r) => setTimeout(r, this.#o.reconnectWaitMs ?? 1000));
      }
    }
  }

  #subscribe(nc: NatsConnection, subject: string, fn: BusHandler): Subscription {
    return nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err !== null) return;
        let value: unknown;
        try {
          value = JSON.parse(new TextDecoder().decode(msg.data));
        } catch {
          return; // not ours: ignored
        }
        try {
          fn(value);
        } catch (e) {
          this.#o.log.error("NATS handler failed", { subject, error: (e as Error).message });
        }
      },
    });
  }

  async #watch(nc: NatsConnection): Promise<void> {
    const { log } = this.#o;
    for await (const s of nc.status()) {
      if (s.type === "disconnect") {
        this.#setUp(false);
        log.warn("NATS disconnected; deliveries wait for the store poll", {});
      } else if (s.type === "reconnect") {
        this.#setUp(true);
        log.info("NATS reconnected", {});
      }
    }
  }
}
