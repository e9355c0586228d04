/** Address derivation: the MQTT connection URL and the registration URL (spec 6.9, 9). */

import { NixMsgError } from "./errors.ts";

/** How the SDK reaches the server (spec 9: WebSocket unless TCP is asked for). */
export type Transport = "websocket" | "tcp";

const SECURE: Record<string, boolean> = {
  "wss:": true,
  "https:": true,
  "mqtts:": true,
  "ws:": false,
  "http:": false,
  "mqtt:": false,
};

function parse(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch (err) {
    throw new NixMsgError("bad_request", `Cannot parse server URL: ${url}`, {
      cause: err,
    });
  }
  if (!(u.protocol in SECURE)) {
    throw new NixMsgError(
      "bad_request",
      `Unsupported server URL scheme: ${u.protocol}`,
    );
  }
  return u;
}

/** The path in front of `/mqtt`, without a trailing slash ("" for the usual `/mqtt`). */
function basePath(u: URL): string {
  let path = u.pathname.replace(/\/+$/, "");
  if (path.endsWith("/mqtt")) path = path.slice(0, -"/mqtt".length);
  return path;
}

/**
 * The URL MQTT.js connects to. `ws`/`wss`/`http`/`https`/`mqtt`/`mqtts` all name the same
 * server; the transport decides the scheme: WebSocket at `<base>/mqtt` (default), or raw TCP
 * (`mqtt://host:port`, `mqtts://` with TLS) only when `transport` is `"tcp"` (spec 9 step 1).
 *
 * @example
 * ```ts
 * connectionUrl("https://relay.example:7443", "websocket"); // "wss://relay.example:7443/mqtt"
 * connectionUrl("wss://relay.example:7443/mqtt", "tcp"); // "mqtts://relay.example:7443"
 * ```
 */
export function connectionUrl(url: string, transport: Transport = "websocket"): string {
  const u = parse(url);
  const secure = SECURE[u.protocol];
  if (transport === "tcp") return `${secure ? "mqtts" : "mqtt"}://${u.host}`;
  return `${secure ? "wss" : "ws"}://${u.host}${basePath(u)}/mqtt${u.search}`;
}

/**
 * The registration endpoint for a connection URL (spec 6.9): `wss` and `mqtts` map to `https`,
 * `ws` and `mqtt` to `http`, the path becomes `/api/client/register`.
 *
 * @example
 * ```ts
 * registerUrl("wss://relay.example:7443/mqtt"); // "https://relay.example:7443/api/client/register"
 * registerUrl("mqtt://10.0.0.5:7443"); // "http://10.0.0.5:7443/api/client/register"
 * ```
 */
export function registerUrl(url: string): string {
  const u = parse(url);
  const scheme = SECURE[u.protocol] ? "https" : "http";
  const base = u.protocol.startsWith("mqtt") ? "" : basePath(u);
  return `${scheme}://${u.host}${base}/api/client/register`;
}
