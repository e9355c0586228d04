/**
 * Listen addresses (spec 4.1): parsing `listen` / `admin_listen` and writing the bound address
 * to `<data_dir>/listen.addr` so a test launcher can find a port chosen by the system.
 */
import { isIP } from "node:net";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** A host and port. An empty host means every local address. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/**
 * Splits `"host:port"`, `":port"` or `"[ipv6]:port"` into its parts.
 *
 * @example
 * parseListenAddress("[::1]:0"); // { host: "::1", port: 0 }
 * parseListenAddress(":7443"); // { host: "", port: 7443 }
 */
export function parseListenAddress(value: string): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port > 65535) {
    throw new Error(`Parse listen address "${value}": expected host:port, :port or [ipv6]:port`);
  }
  const host = m[1] ?? m[2];
  if (m[1] !== undefined && isIP(host) !== 6) {
    throw new Error(`Parse listen address "${value}": brackets need an IPv6 address`);
  }
  return { host, port };
}

/** Formats a host and port as `127.0.0.1:7443` or `[::1]:7443`. */
export function formatHostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The address a local client should dial to reach a server bound to `host`: the wildcard
 * addresses are not meant to be dialled, so they become the loopback of the same family.
 */
export function dialableHost(host: string): string {
  if (host === "" || host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "::1";
  return host;
}

/**
 * Writes `host:port` into `<dataDir>/<name>`, creating the directory when missing. The file is
 * written beside and renamed into place, so a launcher polling for it never reads half a line.
 */
export async function writeAddressFile(
  dataDir: string,
  name: string,
  addr: HostPort,
): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, name);
  const tmp = `${path}.tmp`;
  await writeFile(tmp, formatHostPort(dialableHost(addr.host), addr.port));
  await rename(tmp, path);
}
