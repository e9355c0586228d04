/**
 * Bounds on MQTT connections that have not logged in yet (issue 28): each address group may hold
 * a share of them, and each must log in (CONNACK success) within a short deadline, like NATS'
 * authentication timeout. Without them one address could hold thousands of connections that
 * never send a CONNECT, or send one slowly, and every one of them holds memory and a descriptor.
 */
import type { Logger } from "../log/log.ts";
import { LogThrottle } from "../log/throttle.ts";
import { countClosedConnection } from "../metrics/metrics.ts";
import { AddressShare } from "./address_share.ts";
import type { MqttConn, MqttHandler } from "./types.ts";

/** Options of {@linkcode PreAuthGate}. */
export interface PreAuthOptions {
  /** Most connections of one address group before login. */
  readonly perAddress: number;
  /** Time from choosing MQTT to a successful login, in ms. */
  readonly deadlineMs: number;
  /** The group an address counts in (IPv6 by prefix). */
  readonly group: (ip: string) => string;
  /** True for a peer that carries many clients (a trusted proxy): no share, only the deadline. */
  readonly exempt: (ip: string) => boolean;
  readonly log: Logger;
}

/** Wraps the MQTT handler with the share and the deadline. */
export class PreAuthGate {
  readonly #o: PreAuthOptions;
  readonly #share: AddressShare;
  readonly #throttle: LogThrottle;

  constructor(o: PreAuthOptions) {
    this.#o = o;
    this.#share = new AddressShare(o.perAddress);
    this.#throttle = new LogThrottle(o.log);
  }

  /** Connections of `ip`'s group that have not logged in yet, for tests. */
  heldBy(ip: string): number {
    return this.#share.heldBy(this.#o.group(ip));
  }

  /** The handler to give the listener: admits `conn` to `next`, or closes it at once. */
  wrap(next: MqttHandler): MqttHandler {
    return (conn) => {
      const o = this.#o;
      const ip = conn.remoteAddress;
      const release = o.exempt(ip) ? () => {} : this.#share.take(o.group(ip));
      const close = () => conn.transport === "ws" ? conn.ws.terminate() : conn.stream.destroy();
      if (release === null) {
        countClosedConnection("unauthenticated_ip_cap");
        this.#throttle.line(
          "warn",
          "MQTT connection refused: too many not logged in from one address",
          "unauthenticated_ip_cap",
          { remote: ip, max_unauthenticated_per_ip: o.perAddress },
          { max_unauthenticated_per_ip: o.perAddress },
        );
        return close();
      }
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        release();
      };
      const timer = setTimeout(() => {
        if (settled) return;
        settle();
        countClosedConnection("auth_deadline");
        this.#throttle.line(
          "info",
          "MQTT connection closed: no login within the deadline",
          "auth_deadline",
          { remote: ip, seconds: o.deadlineMs / 1000 },
          { seconds: o.deadlineMs / 1000 },
        );
        close();
      }, o.deadlineMs);
      onClose(conn, settle);
      next({ ...conn, loggedIn: settle });
    };
  }

  /** Stops the log timers. */
  close(): void {
    this.#throttle.close();
  }
}

function onClose(conn: MqttConn, fn: () => void): void {
  if (conn.transport === "ws") conn.ws.once("close", fn);
  else conn.stream.once("close", fn);
}
