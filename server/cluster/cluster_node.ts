/**
 * One node of a cluster (issue 30): several `nixmsg serve` processes on one PostgreSQL store,
 * with NATS between them as a notifier. The store is the truth; NATS only shortens the wait.
 *
 * - **Wake-ups.** A committed op whose deliveries or receipts are for an endpoint with no push
 *   loop on this node publishes its id on {@link WAKE_SUBJECT}; every node wakes the push loop or
 *   receipt pusher it holds for those ids (they then claim or read from the store, as always).
 * - **Logins.** A handshake moves the endpoint's `online_since` forward (its login revision);
 *   the node publishes it on {@link LOGIN_SUBJECT}. A node holding an older handshaken
 *   connection of that endpoint closes it with 0x8E (session taken over): the last handshake
 *   wins, on every node, by the revision the store gave it.
 * - **Admin closes.** An admin disable, delete, password reset or kick on any node goes out on
 *   {@link CLOSE_SUBJECT}; the nodes holding a connection of the endpoint close it as that node
 *   would. The store records them too (disabled, deleted, `closed_through`), for the poll.
 * - **The poll.** Every `pollMs` the node asks the store which of its endpoints have unpushed
 *   deliveries or unacknowledged receipts and wakes them, closes connections a later handshake
 *   elsewhere superseded or an admin closed (deleted, disabled, or kicked or reset at or after
 *   their login), and arms the scheduler for the next due message. A lost NATS message (NATS
 *   down, reconnecting) only delays work until this poll.
 * - **Dead nodes.** Every `reapMs` the node releases the push marks of nodes whose lease in the
 *   store ran out (`node.reap`), so their deliveries are pushed again to wherever the endpoint
 *   reconnects, and takes the endpoints they held offline (the watchers hear it).
 * - **Presence.** A login or logout here is published on {@link PRESENCE_SUBJECT}; every node
 *   tells its watchers. Answers (`presence.get`, `directory.list`) read the store's login state.
 * - **Duties.** The live node with the smallest id runs scheduled dispatch, the expiry cleanup
 *   and housekeeping; the next one takes them when its lease runs out.
 */
import type { Conn, ConnectionTable } from "../app/connections.ts";
import type { Broker } from "../broker/types.ts";
import type { Store } from "../store/store.ts";
import type { FatalReason } from "../protocol/frames.ts";
import type { Logger } from "../log/log.ts";
import type { BusHandler } from "./nats_bus.ts";
import type { RevokedNotice } from "../app/messaging/effects.ts";
import type { ClusterLogin } from "../store/queries/cluster.ts";

/** Where a committed op's wake-ups for endpoints held by other nodes go. */
export const WAKE_SUBJECT = "nixmsg.cluster.wake";
/** Where a handshake's login revision goes. */
export const LOGIN_SUBJECT = "nixmsg.cluster.login";
/** Where an admin `fatal` (disable, delete, password reset) or kick goes to the other nodes. */
export const CLOSE_SUBJECT = "nixmsg.cluster.close";
/** Where a live frame (QoS 0, not stored: a group event) for endpoints held elsewhere goes. */
export const FRAME_SUBJECT = "nixmsg.cluster.frame";

/** Where `revoked` notices owed to connections held by other nodes go (a recall, spec 6.4). */
export const REVOKE_SUBJECT = "nixmsg.cluster.revoke";

/** Where an endpoint's presence change (online, offline) goes to the other nodes' watchers. */
export const PRESENCE_SUBJECT = "nixmsg.cluster.presence";

/** MQTT 5 DISCONNECT reason: session taken over. */
const SESSION_TAKEN_OVER = 0x8e;
/** How many endpoint ids one poll query asks about. */
const POLL_CHUNK = 500;
/** How many dead nodes one `node.reap` handles. */
const REAP_LIMIT = 16;

/** A wake-up on {@link WAKE_SUBJECT}. */
export interface WakeNotice {
  /** The publishing node. */
  readonly n: string;
  /** Endpoints with new pending deliveries. */
  readonly d: readonly string[];
  /** Endpoints (senders) with new receipts. */
  readonly r: readonly string[];
}

/** `revoked` notices on {@link REVOKE_SUBJECT}; the node holding `connCode` posts each. */
export interface RevokeNotice {
  readonly n: string;
  readonly r: readonly RevokedNotice[];
}

/** A login on {@link LOGIN_SUBJECT}. */
export interface LoginNotice {
  readonly n: string;
  /** The endpoint. */
  readonly e: string;
  /** Its `online_since` after the handshake: the login revision. */
  readonly v: number;
}

/** A close on {@link CLOSE_SUBJECT}: `fatal` with a reason, or a kick (no frame). */
export interface CloseNotice {
  readonly n: string;
  readonly e: string;
  /** The `fatal` reason; absent for a kick. */
  readonly r?: FatalReason;
}

/** A live frame on {@link FRAME_SUBJECT} for the current connections of `e`. */
export interface FrameNotice {
  readonly n: string;
  readonly e: readonly string[];
  /** The encoded frame (UTF-8 JSON). */
  readonly f: string;
}

/** A presence change on {@link PRESENCE_SUBJECT}. */
export interface PresenceNotice {
  readonly n: string;
  readonly e: string;
  /** Online (true) or offline (false). */
  readonly o: boolean;
  /** When (Unix ms). */
  readonly t: number;
}

/** The local presence watchers, as other nodes' changes and a reap reach them. */
export interface LocalPresence {
  /** Another node's endpoint came online or went offline. */
  remoteChange(endpointId: string, online: boolean, atMs: number): void;
  /** A reap took these endpoints (held by dead nodes) offline in the store. */
  reaped(endpointIds: readonly string[]): void;
}

/** The local connections, as another node's close or frame reaches them. */
export interface LocalSessions {
  /** Sends `fatal` and closes the endpoint's connection on this node only. */
  fatalLocal(endpointId: string, reason: FatalReason): Promise<void>;
  /** Closes the endpoint's connection on this node only, without a frame. */
  kickLocal(endpointId: string): boolean;
  /** Posts `bytes` (QoS 0) to the handshaken current connections of `ids` on this node. */
  postLocal(ids: readonly string[], bytes: Uint8Array): void;
}

/** What the node needs of the bus. */
export interface ClusterBus {
  publish(subject: string, value: unknown): void;
  readonly connected: boolean;
}

/** What the node needs of the messaging runtime. */
export interface LocalWaker {
  /** Wakes the push loops and receipt pushers this node holds for these endpoints. */
  wakeLocal(deliveries: readonly string[], receipts: readonly string[]): void;
  /** Posts the `revoked` frames owed to connections held here; others are ignored. */
  revokeLocal?(notices: readonly RevokedNotice[]): void;
  /** Arms the scheduler for a message due at `sendAt`. */
  scheduled(sendAt: number): void;
}

/** Options of {@linkcode ClusterNode}. */
export interface ClusterNodeOptions {
  readonly app: {
    readonly store: Pick<Store, "run" | "query">;
    readonly conns: ConnectionTable;
    readonly broker: Pick<Broker, "disconnect">;
    readonly clock: () => number;
  };
  readonly nodeId: string;
  readonly waker: LocalWaker;
  /** Where other nodes' closes and frames go; without it they are ignored. */
  readonly sessions?: LocalSessions;
  /** Where other nodes' presence changes and reaped endpoints go; without it they are ignored. */
  readonly presence?: LocalPresence;
  /**
   * Called when this node takes (true) or hands over (false) the cluster duties: scheduled
   * dispatch, the expiry cleanup and housekeeping. One node holds them at a time: the live node
   * (lease not run out) with the smallest id.
   */
  readonly onDuties?: (held: boolean) => void;
  readonly log: Logger;
  /** The store poll period (ms); default {@link DEFAULT_POLL_MS}. */
  readonly pollMs?: number;
  /** How often dead nodes are reaped (ms); default {@link DEFAULT_REAP_MS}. */
  readonly reapMs?: number;
}

/** A lost notification delays a push by at most about this long. */
export const DEFAULT_POLL_MS = 1000;
/** Dead nodes' claims are released at most this long after their lease ran out. */
export const DEFAULT_REAP_MS = 5000;

/** The routing and polling of one cluster node. */
export class ClusterNode {
  readonly #o: ClusterNodeOptions;
  #bus: ClusterBus | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;
  #lastReap = 0;
  #polling: Promise<void> = Promise.resolve();
  #duties = false;
  /** Counters for tests and logs. */
  readonly counts = {
    wakesIn: 0,
    loginsIn: 0,
    takenOver: 0,
    polls: 0,
    polledWakes: 0,
    /** Admin closes this node's poll found (NATS had not brought them). */
    polledCloses: 0,
  };

  constructor(o: ClusterNodeOptions) {
    this.#o = o;
  }

  /** The bus subscriptions this node needs; pass them to `NatsBus.open`. */
  handlers(): Record<string, BusHandler> {
    return {
      [WAKE_SUBJECT]: (v) => this.#onWake(v),
      [LOGIN_SUBJECT]: (v) => this.#onLogin(v),
      [CLOSE_SUBJECT]: (v) => this.#onClose(v),
      [FRAME_SUBJECT]: (v) => this.#onFrame(v),
      [PRESENCE_SUBJECT]: (v) => this.#onPresence(v),
      [REVOKE_SUBJECT]: (v) => this.#onRevoke(v),
    };
  }

  /** Whether this node holds the cluster duties (scheduled dispatch, cleanup, housekeeping). */
  get duties(): boolean {
    return this.#duties;
  }

  /** This node's endpoint came online or went offline: the other nodes' watchers hear it. */
  presenceChanged(endpointId: string, online: boolean, atMs: number): void {
    if (this.#stopped) return;
    const notice: PresenceNotice = { n: this.#o.nodeId, e: endpointId, o: online, t: atMs };
    this.#bus?.publish(PRESENCE_SUBJECT, notice);
  }

  /** Starts publishing on `bus` and polling the store. */
  start(bus: ClusterBus): void {
    this.#bus = bus;
    this.#schedule();
  }

  /** Stops the poll (waits for one under way). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#polling;
  }

  /** A committed op has work for endpoints with no push loop or receipt pusher here. */
  remoteWake(deliveries: readonly string[], receipts: readonly string[]): void {
    if (this.#stopped || (deliveries.length === 0 && receipts.length === 0)) return;
    const notice: WakeNotice = { n: this.#o.nodeId, d: deliveries, r: receipts };
    this.#bus?.publish(WAKE_SUBJECT, notice);
  }

  /** A handshake committed here with login revision `revision`: the other nodes let go. */
  loggedIn(endpointId: string, revision: number): void {
    if (this.#stopped) return;
    const notice: LoginNotice = { n: this.#o.nodeId, e: endpointId, v: revision };
    this.#bus?.publish(LOGIN_SUBJECT, notice);
  }

  /**
   * An admin closed `endpointId` here (`fatal` with `reason`, or a kick without): the other nodes
   * close their connection of it too. A kick is first recorded in the store (`endpoint.kick`;
   * the other closes were, by their ops), so that when NATS loses the notice the other nodes'
   * polls still find it. Resolves once that is done; never rejects.
   */
  async closeElsewhere(endpointId: string, reason?: FatalReason): Promise<void> {
    if (this.#stopped) return;
    if (reason === undefined) {
      try {
        await this.#o.app.store.run("endpoint.kick", { endpointId });
      } catch (err) {
        this.#o.log.warn("Kick not recorded in the store; NATS only", {
          endpoint: endpointId,
          error: (err as Error).message,
        });
      }
    }
    const notice: CloseNotice = {
      n: this.#o.nodeId,
      e: endpointId,
      ...(reason !== undefined ? { r: reason } : {}),
    };
    this.#bus?.publish(CLOSE_SUBJECT, notice);
  }

  /** A live frame for endpoints not held here (group events): the node holding them posts it. */
  postElsewhere(endpointIds: readonly string[], bytes: Uint8Array): void {
    if (this.#stopped || endpointIds.length === 0) return;
    const notice: FrameNotice = {
      n: this.#o.nodeId,
      e: endpointIds,
      f: new TextDecoder().decode(bytes),
    };
    this.#bus?.publish(FRAME_SUBJECT, notice);
  }

  /** `revoked` notices for connections not held here: the node holding each posts it. */
  revokeElsewhere(notices: readonly RevokedNotice[]): void {
    if (this.#stopped || notices.length === 0) return;
    const notice: RevokeNotice = { n: this.#o.nodeId, r: notices };
    this.#bus?.publish(REVOKE_SUBJECT, notice);
  }

  /**
   * This node is stopping and its store rows took `endpointIds` offline (`recovery.startup`):
   * the other nodes' watchers hear it. Works after {@link stop}, while the bus is open.
   */
  leaving(endpointIds: readonly string[], atMs: number): void {
    for (const e of endpointIds) {
      const notice: PresenceNotice = { n: this.#o.nodeId, e, o: false, t: atMs };
      this.#bus?.publish(PRESENCE_SUBJECT, notice);
    }
  }

  /** Runs one poll now (tests); resolves when it is done. */
  pollNow(): Promise<void> {
    this.#polling = this.#polling.then(() => this.#poll());
    return this.#polling;
  }

  #onWake(v: unknown): void {
    if (!isWake(v) || v.n === this.#o.nodeId) return;
    this.counts.wakesIn++;
    this.#o.waker.wakeLocal(v.d, v.r);
  }

  #onLogin(v: unknown): void {
    if (!isLogin(v) || v.n === this.#o.nodeId) return;
    this.counts.loginsIn++;
    const conn = this.#o.app.conns.current(v.e);
    if (conn === undefined) return;
    const mine = conn.onlineSince;
    // A connection still in its handshake will get a later revision than v.v: it wins.
    if (mine === undefined || mine >= v.v) return;
    this.#takeOver(conn, v.n);
  }

  #onClose(v: unknown): void {
    if (!isClose(v) || v.n === this.#o.nodeId) return;
    const sessions = this.#o.sessions;
    if (sessions === undefined) return;
    if (v.r === undefined) sessions.kickLocal(v.e);
    else {
      sessions.fatalLocal(v.e, v.r).catch((err) =>
        this.#o.log.warn("fatal from another node failed", { error: (err as Error).message })
      );
    }
  }

  #onFrame(v: unknown): void {
    if (!isFrame(v) || v.n === this.#o.nodeId) return;
    this.#o.sessions?.postLocal(v.e, new TextEncoder().encode(v.f));
  }

  #onRevoke(v: unknown): void {
    if (!isRevoke(v) || v.n === this.#o.nodeId) return;
    this.#o.waker.revokeLocal?.(v.r);
  }

  #onPresence(v: unknown): void {
    if (!isPresence(v) || v.n === this.#o.nodeId) return;
    this.#o.presence?.remoteChange(v.e, v.o, v.t);
  }

  /**
   * Whether this node holds the duties: it is the live node with the smallest id. A dead
   * holder's lease runs out and the next one takes over at its next poll; two nodes may overlap
   * for a poll or two (a paused holder), which the ops allow (compare-and-set, SKIP LOCKED).
   */
  async #checkDuties(now: number): Promise<void> {
    const nodes = await this.#o.app.store.query("node.list", {});
    const live = nodes.filter((n) => Number(n.lease_until) >= now).map((n) => n.node_id).sort();
    const held = live.length > 0 && live[0] === this.#o.nodeId;
    if (held === this.#duties || this.#stopped) return;
    this.#duties = held;
    this.#o.log.info(held ? "Cluster duties taken" : "Cluster duties handed over", {
      node_id: this.#o.nodeId,
      duties: "scheduled dispatch, cleanup, housekeeping",
    });
    this.#o.onDuties?.(held);
  }

  #takeOver(conn: Conn, by: string): void {
    if (conn.closed) return;
    this.counts.takenOver++;
    this.#o.log.info("Session taken over on another node", {
      endpoint: conn.endpointId,
      conn: conn.code,
      by,
    });
    this.#o.app.broker.disconnect(conn.code, SESSION_TAKEN_OVER);
  }

  /** Closes `conn` as the admin's node did: `fatal` with `reason`, or a kick (no frame). */
  #adminClose(conn: Conn, reason: FatalReason | "kick"): void {
    const sessions = this.#o.sessions;
    if (sessions === undefined) return;
    this.counts.polledCloses++;
    this.#o.log.info("Admin close found by the store poll", {
      endpoint: conn.endpointId,
      conn: conn.code,
      reason,
    });
    if (reason === "kick") sessions.kickLocal(conn.endpointId);
    else {
      sessions.fatalLocal(conn.endpointId, reason).catch((err) =>
        this.#o.log.warn("fatal from the store poll failed", { error: (err as Error).message })
      );
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#polling = this.#poll().finally(() => this.#schedule());
    }, this.#o.pollMs ?? DEFAULT_POLL_MS);
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    const { app, log } = this.#o;
    this.counts.polls++;
    try {
      const held: Conn[] = [];
      for (const c of app.conns.all()) {
        if (c.handshaken && !c.closed && app.conns.isCurrent(c.endpointId, c.code)) held.push(c);
      }
      for (let i = 0; i < held.length && !this.#stopped; i += POLL_CHUNK) {
        await this.#pollChunk(held.slice(i, i + POLL_CHUNK));
      }
      const now = app.clock();
      await this.#checkDuties(now);
      if (this.#duties) {
        const due = await app.store.query("message.next_due_at", {});
        if (due !== null && !this.#stopped) this.#o.waker.scheduled(due);
      }
      if (now - this.#lastReap >= (this.#o.reapMs ?? DEFAULT_REAP_MS)) {
        this.#lastReap = now;
        const r = await app.store.run("node.reap", { limit: REAP_LIMIT });
        if (r.nodes.length > 0) {
          log.warn("Dead nodes' push marks released", {
            nodes: r.nodes.join(","),
            deliveries: r.deliveries,
            offline: r.offline.length,
          });
        }
        if (r.offline.length > 0) this.#o.presence?.reaped(r.offline);
      }
    } catch (err) {
      log.warn("Cluster poll failed; trying again", { error: (err as Error).message });
    }
  }

  async #pollChunk(conns: readonly Conn[]): Promise<void> {
    const { app } = this.#o;
    const ids = conns.map((c) => c.endpointId);
    // What the store says of these logins: admin closes and later handshakes on other nodes
    // (their NATS notices may have been lost). One query for the whole chunk.
    const rows = await app.store.query("cluster.logins", { ids });
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const c of conns) {
      if (c.closed || c.closing || app.conns.current(c.endpointId) !== c) continue;
      const verdict = judgeLogin(c.onlineSince, byId.get(c.endpointId));
      if (verdict === null) continue;
      if (verdict === "taken_over") this.#takeOver(c, "store");
      else this.#adminClose(c, verdict);
    }
    const work = await app.store.query("cluster.waiting", { ids, now: app.clock() });
    if (work.deliveries.length + work.receipts.length === 0) return;
    this.counts.polledWakes += work.deliveries.length + work.receipts.length;
    this.#o.waker.wakeLocal(work.deliveries, work.receipts);
  }
}

/**
 * What the store's row says of a connection that logged in at revision `mine` (its
 * `onlineSince`): null to keep it; `deleted` (no row, or a row created after that login: it has
 * no login as late), `disabled`, the close recorded at or after that login (`closed_reason`), or
 * `taken_over` (a later login elsewhere). Admin closes come first, as on one node.
 */
export function judgeLogin(
  mine: number | undefined,
  row: ClusterLogin | undefined,
): FatalReason | "kick" | "taken_over" | null {
  if (mine === undefined) return null;
  if (row === undefined || row.online_since === null || row.online_since < mine) return "deleted";
  if (!row.enabled) return "disabled";
  if (row.closed_through !== null && row.closed_through >= mine) {
    return row.closed_reason === "password_reset"
      ? "password_reset"
      : row.closed_reason === "disabled"
      ? "disabled"
      : "kick";
  }
  if (row.online_since > mine) return "taken_over";
  return null;
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

function isWake(v: unknown): v is WakeNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && isStringArray(o.d) && isStringArray(o.r);
}

function isLogin(v: unknown): v is LoginNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && typeof o.e === "string" && typeof o.v === "number";
}

const FATAL_REASONS: ReadonlySet<string> = new Set<FatalReason>([
  "disabled",
  "deleted",
  "password_reset",
  "protocol",
]);

function isClose(v: unknown): v is CloseNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && typeof o.e === "string" &&
    (o.r === undefined || (typeof o.r === "string" && FATAL_REASONS.has(o.r)));
}

function isPresence(v: unknown): v is PresenceNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && typeof o.e === "string" && typeof o.o === "boolean" &&
    typeof o.t === "number";
}

function isRevoke(v: unknown): v is RevokeNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && Array.isArray(o.r) && o.r.every((x) => {
    if (typeof x !== "object" || x === null) return false;
    const r = x as Record<string, unknown>;
    return typeof r.endpointId === "string" && typeof r.connCode === "string" &&
      typeof r.msgId === "string" && typeof r.from === "string" && typeof r.reason === "string";
  });
}

function isFrame(v: unknown): v is FrameNotice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.n === "string" && isStringArray(o.e) && typeof o.f === "string";
}
