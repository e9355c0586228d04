/**
 * Where a webhook may connect (issue 34, SSRF): http:// and https:// only, and never to a
 * loopback, private, link-local, multicast or otherwise non-public address unless config
 * `webhooks.allow` lists the host name or a network holding the address. The check runs when a
 * webhook is configured and again on every connect, on the addresses DNS gives then, so a name
 * that later resolves to a private address is refused too.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { type IpAddress, type IpRange, parseIp, parseIpRange, rangeContains } from "../net/ip.ts";

/** Networks refused unless allow-listed (IANA special-purpose registries, RFC 6890). */
const DENIED: readonly IpRange[] = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "::/128",
  "::1/128",
  "64:ff9b::/96",
  "100::/64",
  "2001:db8::/32",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
].map((r) => parseIpRange(r)!);

/** Why a webhook URL or address was refused; `message` is shown to the administrator. */
export class WebhookAddressError extends Error {
  override name = "WebhookAddressError";
}

/** The parsed allow-list of config `webhooks.allow`. */
export interface AllowList {
  readonly hosts: ReadonlySet<string>;
  readonly ranges: readonly IpRange[];
}

/** Splits `webhooks.allow` (host names and CIDR ranges, as config.ts normalized them). */
export function allowListOf(entries: readonly string[]): AllowList {
  const hosts = new Set<string>();
  const ranges: IpRange[] = [];
  for (const e of entries) {
    const r = parseIpRange(e);
    if (r !== null) ranges.push(r);
    else hosts.add(e.toLowerCase());
  }
  return { hosts, ranges };
}

/** True when `ip` is loopback, private, link-local or otherwise not a public address. */
export function isNonPublic(ip: IpAddress): boolean {
  return DENIED.some((r) => rangeContains(r, ip));
}

/** The URL's host without IPv6 brackets, lower case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
}

/**
 * Parses a webhook URL and checks its form: http or https, a host, no user name or password
 * (they would be stored and shown; put credentials in the signature secret instead).
 *
 * @throws {WebhookAddressError} when the URL is unusable
 */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookAddressError("地址不是合法的 URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new WebhookAddressError("地址只能是 http:// 或 https://");
  }
  if (url.username !== "" || url.password !== "") {
    throw new WebhookAddressError("地址不能包含用户名或密码");
  }
  if (url.hash !== "") throw new WebhookAddressError("地址不能包含 # 片段");
  if (hostOf(url) === "") throw new WebhookAddressError("地址缺少主机名");
  return url;
}

/**
 * Checks the addresses `host` resolved to: every one must be public, or the host or the address
 * allow-listed. Returns them.
 *
 * @throws {WebhookAddressError} naming the first refused address
 */
export function checkAddresses(
  host: string,
  addresses: readonly string[],
  allow: AllowList,
): string[] {
  if (addresses.length === 0) throw new WebhookAddressError(`主机名 ${host} 没有地址`);
  if (allow.hosts.has(host)) return [...addresses];
  for (const a of addresses) {
    const ip = parseIp(a);
    if (ip === null) throw new WebhookAddressError(`主机名 ${host} 解析出无效地址`);
    if (isNonPublic(ip) && !allow.ranges.some((r) => rangeContains(r, ip))) {
      throw new WebhookAddressError(
        `地址 ${a} 属于本机、内网或保留网段，不在配置 webhooks.allow 中`,
      );
    }
  }
  return [...addresses];
}

/**
 * Resolves `host` (an IP literal stands for itself), giving up after `timeoutMs`, and checks
 * every address.
 *
 * @throws {WebhookAddressError} when the name does not resolve or an address is refused
 */
export async function resolveChecked(
  host: string,
  allow: AllowList,
  timeoutMs = 10_000,
): Promise<string[]> {
  if (isIP(host) !== 0) return checkAddresses(host, [host], allow);
  let found: { address: string }[];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    found = await Promise.race([
      lookup(host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), timeoutMs);
      }),
    ]);
  } catch {
    throw new WebhookAddressError(`无法解析主机名 ${host}`);
  } finally {
    clearTimeout(timer);
  }
  return checkAddresses(host, found.map((f) => f.address), allow);
}
