import type { MqttConn } from "../net/types.ts";
import type { Logger } from "../log/log.ts";

/** Options of {@linkcode createBroker}. */
export interface BrokerOptions {
  /** Most simultaneous clients; beyond it CONNACK 0x89 "server busy" (3.1.1: 3). Spec 5: 2000. */
  readonly maxClients: number;
  /**
   * Largest MQTT packet in bytes, announced in CONNACK (MQTT 5 Maximum Packet Size) and enforced
   * on incoming packets (config `limits.max_frame_bytes`; spec 5: 786432, the default).
   */
  readonly maxPacketSize?: number;
  /** Lowest keepalive in seconds; lower requests are raised (spec 5: 10). */
  readonly keepAliveMin?: number;
  /** Highest keepalive in seconds; higher requests (and 0) are lowered (spec 5: 600). */
  readonly keepAliveMax?: number;
  readonly log: Logger;
  readonly hooks: BrokerHooks;
  /**
   * Put before every connection code (issue 30: `<node_id>.` on a cluster node, so that the push
   * marks of a node's connections can be told apart in the shared store). Default none.
   */
  readonly connCodePrefix?: string;
}

/** What the broker knows about one connection when it asks to log in. */
export interface ConnectInfo {
  /** Random per connection (16 hex chars); the app layer's handle on it (spec 5 连接代号). */
  readonly connCode: string;
  readonly clientId: string;
  readonly username: string;
  readonly password: string;
  readonly protocolVersion: 4 | 5;
  /** The effective keepalive in seconds, after clamping. */
  readonly keepAlive: number;
  /** CONNECT Maximum Packet Size (MQTT 5), or null when the client set none. */
  readonly maxPacketSize: number | null;
  readonly transport: "tcp" | "ws";
  readonly remoteAddress: string;
  readonly secure: boolean;
}

/** The verdict of {@linkcode BrokerHooks.authenticate}. */
export type AuthResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "bad_credentials" }
  | { readonly ok: false; readonly reason: "error" }
  // issue 28: refused unchecked because the password check queue is full (CONNACK 0x89).
  | { readonly ok: false; readonly reason: "busy" };

/** How the broker reports to the app layer. aedes never leaks past these. */
export interface BrokerHooks {
  /**
   * Decide a login. `bad_credentials` answers CONNACK 0x86 (3.1.1: 4). `error`, or a thrown
   * error, closes the connection without any CONNACK: a database error must not look like bad
   * credentials (spec 5).
   */
  authenticate(info: ConnectInfo): Promise<AuthResult>;
  /** After a successful CONNACK; this is now the client's current connection. */
  connected(info: ConnectInfo): void;
  /** After a SUBSCRIBE to the client's own down topic. */
  subscribed(connCode: string, topic: string): void;
  /**
   * A QoS 0/1 PUBLISH to the client's own up topic, payload copied. The PUBACK waits for the
   * returned promise, so a slow per-endpoint queue back-pressures the reader (spec 5). A
   * rejected promise or a throw closes the connection without PUBACK, so the client resends.
   */
  message(connCode: string, payload: Uint8Array): Promise<void> | void;
  /** Once for every connection that was `connected`, including taken-over ones. */
  disconnected(connCode: string, clientId: string): void;
  /**
   * Once for every connection that `authenticate` was asked about and that closed without ever
   * being `connected` (refused, or gone before it was ready), after `authenticate` settled.
   */
  abandoned(connCode: string): void;
}

/** The fate of one {@linkcode Broker.publish}. */
export type PublishOutcome = "acked" | "sent" | "dropped";

/** The broker as the rest of the server sees it. */
export interface Broker {
  /** Take an MQTT connection from the listener: apply the read patch, wrap a WebSocket. */
  handle(conn: MqttConn): void;
  /**
   * Publish to the client's down topic `nix/c/{id}/down`. Resolves `acked` on PUBACK (QoS 1),
   * `sent` once written (QoS 0), `dropped` if the client is gone, not connected, too far behind,
   * declared a smaller Maximum Packet Size, or the write failed. Never throws.
   */
  publish(connCode: string, payload: Uint8Array, qos: 0 | 1): Promise<PublishOutcome>;
  /**
   * Like `publish`, for a caller that does not wait for the outcome (a `resp`, a best-effort
   * notice): the same checks and the same packet, without a promise per downlink (issue 19).
   */
  post(connCode: string, payload: Uint8Array, qos: 0 | 1): void;
  /** MQTT 5 DISCONNECT with `reasonCode` (default 0x00) when v5, then close. Unknown codes: no-op. */
  disconnect(connCode: string, reasonCode?: number): void;
  /** Connected clients, optionally of one transport. */
  clientCount(transport?: "tcp" | "ws"): number;
  /** Disconnect everyone (MQTT 5: 0x8B) and stop; resolves when every connection has closed. */
  close(): Promise<void>;
}
