/**
 * The real client address behind a reverse proxy (spec 4.5).
 *
 * Only a TCP peer inside `trusted_proxies` may speak for the client: then the client IP is the
 * first X-Forwarded-For entry, from the right, that is not itself a trusted proxy, and
 * X-Forwarded-Proto says whether the client used HTTPS. From any other peer both headers are
 * ignored, so a client cannot forge its address to dodge the login lockouts (spec 5).
 */
import type { IncomingHttpHeaders } from "node:http";
import type { PeerInfo } from "./types.ts";
import {
  formatIp,
  type IpAddress,
  type IpRange,
  parseIp,
  parseIpRange,
  rangeContains,
} from "./ip.ts";

/** The parsed `trusted_proxies` list. */
export interface TrustedProxies {
  readonly ranges: readonly IpRange[];
}

/** No proxy is trusted. */
export const NO_TRUSTED_PROXIES: TrustedProxies = Object.freeze({ ranges: Object.freeze([]) });

/**
 * Parses `trusted_proxies` entries: CIDR ranges or bare addresses, IPv4 or IPv6.
 *
 * @example
 * const trusted = parseTrustedProxies(["127.0.0.1/32", "10.0.0.0/8", "::1"]);
 */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  const ranges = entries.map((entry) => {
    const range = parseIpRange(entry);
    if (range === null) throw new Error(`Parse trusted proxy "${entry}": not an IP or CIDR range`);
    return range;
  });
  return Object.freeze({ ranges: Object.freeze(ranges) });
}

/** True when `ip` is one of the trusted proxies. */
export function isTrustedProxy(ip: IpAddress, trusted: TrustedProxies): boolean {
  return trusted.ranges.some((range) => rangeContains(range, ip));
}

/** One X-Forwarded-For entry as an address; tolerates `1.2.3.4:80` and `[::1]:80`. */
function parseForwarded(entry: string): IpAddress | null {
  const s = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed !== null) return parseIp(bracketed[1]);
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(s);
  return parseIp(v4WithPort === null ? s : v4WithPort[1]);
}

function headerList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const joined = Array.isArray(value) ? value.join(",") : value;
  return joined.split(",").map((v) => v.trim()).filter((v) => v !== "");
}

/**
 * The client address and scheme of one HTTP or WebSocket request.
 *
 * `socketAddr` is the TCP peer and `socketSecure` whether that connection is TLS. When the peer is
 * not a trusted proxy they are the answer. When it is, X-Forwarded-For is walked from the right,
 * skipping trusted proxies; if every entry is trusted the leftmost one is the client, and an
 * unreadable entry stops the walk at the last trusted hop. X-Forwarded-Proto (its first value,
 * as the outermost proxy set it) decides `secure`; without it the socket does.
 *
 * @example
 * peerInfo("127.0.0.1", { "x-forwarded-for": "203.0.113.7" }, trusted, false);
 * // { remoteAddress: "203.0.113.7", secure: false } when 127.0.0.1 is trusted
 */
export function peerInfo(
  socketAddr: string,
  headers: IncomingHttpHeaders,
  trusted: TrustedProxies,
  socketSecure: boolean,
): PeerInfo {
  const peer = parseIp(socketAddr);
  const direct = {
    remoteAddress: peer === null ? socketAddr : formatIp(peer),
    secure: socketSecure,
  };
  if (peer === null || !isTrustedProxy(peer, trusted)) return direct;

  let client = peer;
  const hops = headerList(headers["x-forwarded-for"]);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseForwarded(hops[i]);
    if (hop === null) break;
    client = hop;
    if (!isTrustedProxy(hop, trusted)) break;
  }

  const proto = headerList(headers["x-forwarded-proto"])[0]?.toLowerCase();
  return {
    remoteAddress: formatIp(client),
    secure: proto === undefined ? socketSecure : proto === "https",
  };
}
