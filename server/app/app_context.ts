import type { Config } from "../config/types.ts";
import type { Logger } from "../log/log.ts";
import type { Store } from "../store/store.ts";
import type { PasswordPool } from "../auth/password_pool.ts";
import type { IpLockouts, LoginLockouts, SharedCounters, TalkLockouts } from "../auth/lockout.ts";
import type { RateLimiter } from "../auth/rate_limit.ts";
import type { SecurityLog } from "../auth/security_log.ts";
import type { Broker } from "../broker/types.ts";
import type { ConnectionTable } from "./connections.ts";
import type { Messaging } from "./messaging/effects.ts";
import type { Conn } from "./connections.ts";
import type { InboxTap } from "./inbox_tap.ts";
import type { WebhookDispatcher } from "../webhooks/dispatcher.ts";

/** Presence as the use cases see it (spec 6.5). */
export interface PresenceView {
  /** True when the endpoint has a handshaken current connection on this node. */
  isOnline(endpointId: string): boolean;
  /**
   * Online as the answers report it: on this node, or (a cluster node, issue 30) logged in on
   * another one by the store's login state (`online_since` later than `offline_since`).
   */
  onlineWith(endpointId: string, onlineSince: number | null, offlineSince: number | null): boolean;
  /** {@link onlineWith} for `ids`, reading their stored times when in a cluster. */
  onlineAmong(ids: readonly string[]): Promise<(endpointId: string) => boolean>;
  /** Replaces a connection's presence watch. */
  watch(conn: Conn, ids: readonly string[], all: boolean): void;
}

/** The services every use case shares; built once by `startServer`. */
export interface App {
  readonly config: Config;
  readonly log: Logger;
  /** Every write op and read query (spec 7.2: reads do not go through the writer). */
  readonly store: Store;
  readonly pool: PasswordPool;
  readonly loginLocks: LoginLockouts;
  /** Talk-password failures per sender+target and per target (spec 5 锁定). */
  readonly talkLocks: TalkLockouts;
  /** Registration-code failures per IP (spec 5 锁定, 6.9). */
  readonly registrationLocks: IpLockouts;
  /** Admin password and API token failures per IP (spec 5 锁定, 8). */
  readonly adminLocks: IpLockouts;
  /** A cluster's counters in the store (issue 30 item 4); absent on a single node. */
  readonly sharedCounters?: SharedCounters;
  /** Security log lines and metrics (issue 18). */
  readonly security: SecurityLog;
  /** Requests per endpoint, except ack and receipt_ack (spec 6.10). */
  readonly rate: RateLimiter;
  readonly conns: ConnectionTable;
  /** The live inbox: admin streams that watch an endpoint's downlinks (issue 32). */
  readonly inbox: InboxTap;
  /** Set once the broker exists; the hooks only fire after that. */
  broker: Broker;
  /** Who is online (spec 6.5) and the presence watches; set at startup. */
  presence: PresenceView;
  /** The live messaging side (push loops, receipts, scheduler); set at startup. */
  messaging: Messaging;
  /** The webhook dispatcher (issue 34); set at startup. */
  webhooks?: WebhookDispatcher;
  readonly clock: () => number;
  /**
   * A cluster node's relay of live frames (issue 30): frames for endpoints with no connection
   * here go to the node holding them. Unset on a single node.
   */
  remoteFrames?: (endpointIds: readonly string[], bytes: Uint8Array) => void;
  /**
   * The key a client address counts under in per-address rules and lockouts (issue 28): the
   * address itself for IPv4, its `limits.ipv6_prefix_bits` network for IPv6.
   */
  readonly addressKey: (ip: string) => string;
}
