import type { App } from "./app_context.ts";
import type { Conn } from "./connections.ts";
import type { MqttApp } from "./mqtt_app.ts";
import { encodeFrame } from "../protocol/mod.ts";

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

  constructor(app: App, mqtt: MqttApp) {
    this.#app = app;
    this.#mqtt = mqtt;
    mqtt.listen({
      handshaken: (conn) => {
        if (this.#announced.has(conn.endpointId)) return;
        this.#announced.add(conn.endpointId);
        this.#notify(conn.endpointId, true);
      },
      gone: (conn, wasCurrent) => {
        this.unwatch(conn.code);
        const id = conn.endpointId;
        // Only an endpoint announced online is announced offline.
        if (wasCurrent && !this.isOnline(id) && this.#announced.delete(id)) {
          this.#notify(id, false);
        }
      },
    });
  }

  /** True when the endpoint has a handshaken current connection. */
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

  #notify(endpointId: string, online: boolean): void {
    const targets = new Set([...this.#all, ...(this.#byId.get(endpointId) ?? [])]);
    if (targets.size === 0) return;
    const bytes = encodeFrame({
      v: 1,
      type: "presence",
      id: endpointId,
      online,
      at_ms: this.#app.clock(),
    });
    for (const code of targets) {
      const w = this.#watches.get(code);
      if (!w || !w.conn.handshaken || w.conn.closed) continue;
      this.#mqtt.post(w.conn, bytes, 0);
    }
  }
}
