/**
 * IP addresses and CIDR ranges as numbers, for the trusted-proxy rule (spec 4.5).
 *
 * IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`, what a dual-stack socket reports for an IPv4
 * peer) are treated as the IPv4 address they carry, so `127.0.0.1/8` matches them.
 */
import { isIPv4, isIPv6 } from "node:net";

/** An address as a number: 32 bits for IPv4, 128 bits for IPv6. */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly value: bigint;
}

/** A range of addresses: those whose first `bits` bits equal those of `base`. */
export interface IpRange {
  readonly family: 4 | 6;
  readonly base: bigint;
  readonly bits: number;
}

const MAPPED_PREFIX = 0xffffn;

function v4ToNumber(text: string): bigint {
  return text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6ToNumber(text: string): bigint {
  let s = text;
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) becomes two hex groups.
  if (s.includes(".")) {
    const i = s.lastIndexOf(":");
    const v4 = v4ToNumber(s.slice(i + 1));
    s = `${s.slice(0, i + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  const head = halves[0] === "" ? [] : halves[0].split(":");
  const tail = halves.length < 2 || halves[1] === "" ? [] : halves[1].split(":");
  const zeros = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(zeros).fill("0"), ...tail];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/**
 * Parses an IPv4 or IPv6 address; a zone (`%eth0`) is ignored. Returns null when `text` is not
 * an address.
 */
export function parseIp(text: string): IpAddress | null {
  const s = text.trim().replace(/%.*$/, "");
  if (isIPv4(s)) return { family: 4, value: v4ToNumber(s) };
  if (!isIPv6(s)) return null;
  const value = v6ToNumber(s);
  if (value >> 32n === MAPPED_PREFIX) return { family: 4, value: value & 0xffffffffn };
  return { family: 6, value };
}

/** Formats a parsed address canonically: dotted IPv4, or compressed lower-case IPv6. */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join(".");
  }
  const groups = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push((ip.value >> shift) & 0xffffn);
  // Compress the longest run of two or more zero groups, as RFC 5952 asks.
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > best.len && j - i >= 2) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(":");
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.len).join(":")}`;
}

/** The canonical text of an address (IPv4-mapped IPv6 shown as IPv4), or `text` unchanged. */
export function normalizeIp(text: string): string {
  const ip = parseIp(text);
  return ip === null ? text : formatIp(ip);
}

/**
 * Parses `10.0.0.0/8`, `::1/128` or a bare address (a range of one). Returns null when malformed.
 * A range of IPv4-mapped addresses (`::ffff:10.0.0.0/104`) becomes the IPv4 range it covers.
 */
export function parseIpRange(text: string): IpRange | null {
  const parts = text.trim().split("/");
  if (parts.length > 2) return null;
  const ip = parseIp(parts[0]);
  if (ip === null) return null;
  const mapped = ip.family === 4 && !isIPv4(parts[0].trim());
  const width = ip.family === 4 ? 32 : 128;
  let bits = width;
  if (parts.length === 2) {
    if (!/^\d{1,3}$/.test(parts[1])) return null;
    bits = Number(parts[1]) - (mapped ? 96 : 0);
    if (bits < 0 || bits > width) return null;
  }
  return { family: ip.family, base: ip.value >> BigInt(width - bits), bits };
}

/** True when `ip` lies inside `range`. */
export function rangeContains(range: IpRange, ip: IpAddress): boolean {
  if (range.family !== ip.family) return false;
  const width = ip.family === 4 ? 32 : 128;
  return ip.value >> BigInt(width - range.bits) === range.base;
}

/**
 * The key under which per-address caps, rates and lockouts count `text` (issue 28): an IPv4
 * address stands for itself; an IPv6 address counts with every other address of its
 * `/v6PrefixBits` network (default /64, what one subscriber usually gets), written as that
 * network, e.g. `2001:db8:1:2::/64`. Text that is not an address is returned unchanged.
 *
 * @example
 * addressGroup("2001:db8:1:2::7", 64); // "2001:db8:1:2::/64"
 * addressGroup("::ffff:10.0.0.1", 64); // "10.0.0.1"
 */
export function addressGroup(text: string, v6PrefixBits = 64): string {
  const ip = parseIp(text);
  if (ip === null) return text;
  if (ip.family === 4 || v6PrefixBits >= 128) return formatIp(ip);
  const drop = BigInt(128 - v6PrefixBits);
  const value = (ip.value >> drop) << drop;
  return `${formatIp({ family: 6, value })}/${v6PrefixBits}`;
}
