import type { App } from "./app_context.ts";
import type { Conn } from "./connections.ts";
import type { MqttApp } from "./mqtt_app.ts";
import { encodeFrame } from "../protocol/mod.ts";

/** The store's login state: online when its last login is later than its last logout. */
export function storedOnline(onlineSince: number | null, offlineSince: number | null): boolean {
  return onlineSince !== null &&
    (offlineSince === null || Number(onlineSince) > Number(offlineSince));
}

/** A cluster node's share of presence (issue 30): how this node's changes reach the others. */
export interface PresenceRelay {
  /** Tells the other nodes' watchers that `endpointId` came online or went offline. */
  publish(endpointId: string, online: boolean, atMs: number): void;
}

interface Watch {
  readonly conn: Conn;
  readonly all: boolean;
  readonly ids: ReadonlySet<string>;
}

/**
 * Online notifications (spec 6.5): each connection may watch up to 1000 ids or all; a new watch
 * replaces the old one and a disconnect clears it. Notifications are QoS 0, not stored, and may
 * be dropped when a connection's send queue is full. Online means "has a handshaken current
 * connection"; a taken-over connection going away is not an offline (spec 5).
 */
export class Presence {
  #app: App;
  #mqtt: MqttApp;
  #watches = new Map<string, Watch>();
  #byId = new Map<string, Set<string>>();
  #all = new Set<string>();
  /**
   * Endpoints last announced online. A takeover's handshake finds its endpoint here and is not
   * announced again: the endpoint stayed online (spec 5: the old connection's end is no offline).
   */
  #announced = new Set<string>();
  /** Set on a cluster node: answers count other nodes' logins, changes go to the other nodes. */
  #relay: PresenceRelay | null = null;

  constructor(app: App, mqtt: MqttApp) {
    this.#app = app;
    this.#mqtt = mqtt;
    mqtt.listen({
      handshaken: (conn) => {
        if (this.#announced.has(conn.endpointId)) return;
        this.#announced.add(conn.endpointId);
        // A cluster node: a takeover of a login on another node is no new online (spec 5).
        if (this.#relay !== null && conn.wasOnline === true) return;
        this.#changed(conn.endpointId, true);
      },
      gone: (conn, wasCurrent) => {
        this.unwatch(conn.code);
        const id = conn.endpointId;
        // Only an endpoint announced online is announced offline.
        if (wasCurrent && !this.isOnline(id) && this.#announced.delete(id)) {
          if (this.#relay === null) this.#notify(id, false, this.#app.clock());
          else void this.#offlineUnlessSuperseded(conn);
        }
      },
    });
  }

  /**
   * Makes this a cluster node's presence (issue 30): answers also count endpoints logged in on
   * other nodes (the store's login state), and this node's changes go to `relay`.
   */
  joinCluster(relay: PresenceRelay): void {
    this.#relay = relay;
  }

  /** Another node's endpoint came online or went offline: tell the watchers here. */
  remoteChange(endpointId: string, online: boolean, atMs: number): void {
    this.#notify(endpointId, online, atMs);
  }

  /**
   * A dead node's endpoints were taken offline in the store (its reap, issue 30): tell the
   * watchers here and on the other nodes.
   */
  reaped(endpointIds: readonly string[]): void {
    for (const id of endpointIds) {
      if (this.isOnline(id)) continue;
      this.#changed(id, false);
    }
  }

  onlineWith(endpointId: string, onlineSince: number | null, offlineSince: number | null): boolean {
    return this.isOnline(endpointId) ||
      (this.#relay !== null && storedOnline(onlineSince, offlineSince));
  }

  async onlineAmong(ids: readonly string[]): Promise<(endpointId: string) => boolean> {
    const local = (id: string) => this.isOnline(id);
    if (this.#relay === null) return local;
    const others = [...new Set(ids)].filter((id) => !this.isOnline(id));
    if (others.length === 0) return local;
    const rows = await this.#app.store.query("presence.times", { ids: others });
    const elsewhere = new Set(
      rows.filter((r) => storedOnline(r.online_since, r.offline_since)).map((r) => r.id),
    );
    return (id) => this.isOnline(id) || elsewhere.has(id);
  }

  /** This node's change: the watchers here, and on a cluster node the other nodes'. */
  #changed(endpointId: string, online: boolean): void {
    const at = this.#app.clock();
    this.#notify(endpointId, online, at);
    this.#relay?.publish(endpointId, online, at);
  }

  /**
   * A cluster node's current connection went away: offline, unless a later login on another
   * node (a takeover, 0x8E) moved the endpoint's login revision past this connection's.
   */
  async #offlineUnlessSuperseded(conn: Conn): Promise<void> {
    const id = conn.endpointId;
    try {
      const [row] = await this.#app.store.query("presence.times", { ids: [id] });
      const mine = conn.onlineSince;
      if (
        row !== undefined && row.online_since !== null && mine !== undefined &&
        Number(row.online_since) > mine
      ) return;
    } catch (err) {
      this.#app.log.warn("presence check failed; announcing offline", {
        error: (err as Error).message,
      });
    }
    if (this.isOnline(id) || this.#announced.has(id)) return;
    this.#changed(id, false);
  }

  /** True when the endpoint has a handshaken current connection on this node. */
  isOnline(endpointId: string): boolean {
    return this.#app.conns.current(endpointId)?.handshaken === true;
  }

  /** Replaces the connection's watch (spec 6.5 presence.watch). */
  watch(conn: Conn, ids: readonly string[], all: boolean): void {
    this.unwatch(conn.code);
    const w: Watch = { conn, all, ids: new Set(all ? [] : ids) };
    this.#watches.set(conn.code, w);
    if (all) this.#all.add(conn.code);
    for (const id of w.ids) {
      let s = this.#byId.get(id);
      if (!s) this.#byId.set(id, s = new Set());
      s.add(conn.code);
    }
  }

  /** Forgets a connection's watch. */
  unwatch(connCode: string): void {
    const w = this.#watches.get(connCode);
    if (!w) return;
    this.#watches.delete(connCode);
    this.#all.delete(connCode);
    for (const id of w.ids) {
      const s = this.#byId.get(id);
      s?.delete(connCode);
      if (s?.size === 0) this.#byId.delete(id);
    }
  }

  #notify(endpointId: string, online: boolean, atMs: number): void {
    const targets = new Set([...this.#all, ...(this.#byId.get(endpointId) ?? [])]);
    if (targets.size === 0) return;
    const bytes = encodeFrame({
      v: 1,
      type: "presence",
      id: endpointId,
      online,
      at_ms: atMs,
    });
    for (const code of targets) {
      const w = this.#watches.get(code);
      if (!w || !w.conn.handshaken || w.conn.closed) continue;
      this.#mqtt.post(w.conn, bytes, 0);
    }
  }
}
