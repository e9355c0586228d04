import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";

/** Facts about the peer of one accepted connection, after the trusted-proxy rule (spec 4.5). */
export interface PeerInfo {
  /** The client IP: the TCP peer, or the X-Forwarded-For address when the peer is a trusted proxy. */
  readonly remoteAddress: string;
  /** True when the client reached us over TLS (directly, or per X-Forwarded-Proto from a trusted proxy). */
  readonly secure: boolean;
}

/**
 * An MQTT connection handed from the listener to the broker: either the sniffed raw stream
 * (plain TCP or the TLS socket) or an upgraded WebSocket on `/mqtt` whose subprotocol is `mqtt`.
 */
export type MqttConn =
  | ({ readonly transport: "tcp"; readonly stream: Duplex } & PeerInfo & LoginNotice)
  | ({ readonly transport: "ws"; readonly ws: WebSocket } & PeerInfo & LoginNotice);

/** What the broker tells the listener about a connection's login. */
export interface LoginNotice {
  /** Called once the connection has logged in (CONNACK success): it leaves the pre-login caps. */
  readonly loggedIn?: () => void;
}

/** Receives MQTT connections from the listener. */
export type MqttHandler = (conn: MqttConn) => void;
