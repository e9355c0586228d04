import type { ConnackExtras } from "./codec.ts";
import type { ConnectFacts } from "./connection.ts";

/** The keepalive range clients are held to (spec 5: 10–600 seconds). */
export interface KeepAliveRange {
  readonly min: number;
  readonly max: number;
}

/**
 * The keepalive the server enforces for a requested one (spec 5). 0 ("none") counts as above
 * the maximum.
 */
export function clampKeepAlive(requested: number, range: KeepAliveRange): number {
  if (requested === 0 || requested > range.max) return range.max;
  if (requested < range.min) return range.min;
  return requested;
}

/** What {@linkcode prepareConnect} decided for one CONNECT. */
export interface PreparedConnect {
  readonly facts: ConnectFacts;
  /** Added to the MQTT 5 CONNACK (spec 5 capabilities). */
  readonly extras: ConnackExtras;
  /** Set when the keepalive was changed and the client must be told (MQTT 5 Server Keep Alive). */
  readonly serverKeepAlive: number | undefined;
}

/**
 * Rewrite a decoded CONNECT in place, before aedes acts on it, to the capabilities of spec 5:
 * no persistent sessions (Clean Start forced, Session Expiry clamped to 0 and announced), no
 * will messages, keepalive clamped into range.
 */
// deno-lint-ignore no-explicit-any
export function prepareConnect(packet: any, range: KeepAliveRange): PreparedConnect {
  const v5 = packet.protocolVersion === 5;
  const properties = packet.properties ?? {};
  const extras: ConnackExtras = {
    properties: { maximumQoS: 1, retainAvailable: false, wildcardSubscriptionAvailable: false },
  };
  // Spec 5 MaximumSessionExpiryInterval = 0: the session ends with the connection.
  packet.clean = true;
  if (v5 && (properties.sessionExpiryInterval ?? 0) > 0) {
    properties.sessionExpiryInterval = 0;
    extras.properties!.sessionExpiryInterval = 0;
  }
  // Wills are neither stored nor forwarded.
  packet.will = undefined;

  const keepAlive = clampKeepAlive(packet.keepalive ?? 0, range);
  const changed = keepAlive !== packet.keepalive;
  packet.keepalive = keepAlive;

  const facts: ConnectFacts = {
    clientId: typeof packet.clientId === "string" ? packet.clientId : "",
    protocolVersion: v5 ? 5 : 4,
    keepAlive,
    maxPacketSize: v5 && properties.maximumPacketSize ? properties.maximumPacketSize : null,
    receiveMaximum: v5 && properties.receiveMaximum ? properties.receiveMaximum : 65535,
  };
  return { facts, extras, serverKeepAlive: v5 && changed ? keepAlive : undefined };
}
