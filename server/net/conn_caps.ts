/**
 * Caps on open connections, in total and per client IP (issue 18 item 1).
 *
 * Every accepted TCP connection holds a file descriptor. Without caps, one address could take
 * them all and the server could no longer accept anything. The defaults are derived from the
 * open-files limit read at start (./open_files_limit.ts), keeping headroom for the database, workers and files.
 */
import type { LimitsConfig } from "../config/types.ts";
import type { Logger } from "../log/log.ts";
import { countClosedConnection, setOpenConnections } from "../metrics/metrics.ts";
import { AddressShare } from "./address_share.ts";

/** The effective caps and what they were derived from. */
export interface ConnCaps {
  /** The soft open-files limit (RLIMIT_NOFILE) at start; null when it could not be read. */
  readonly fdLimit: number | null;
  readonly total: number;
  readonly perIp: number;
  /** HTTP connections one address may have in progress on each listener (issue 28). */
  readonly httpPerIp: number;
  /** MQTT connections one address may hold before login (issue 28). */
  readonly unauthenticatedPerIp: number;
  /** Problems worth a warning at start (caps that leave no headroom, unreachable max_clients). */
  readonly warnings: readonly string[];
}

/** Used when the open-files limit cannot be read (not Linux or macOS) or is unlimited. */
const FALLBACK_TOTAL = 10_000;

/** Descriptors kept free for everything that is not a connection. */
export function headroom(fdLimit: number): number {
  return Math.max(64, Math.floor(fdLimit / 10));
}

/**
 * Resolves `limits.max_connections` and `limits.max_connections_per_ip` (0 = derive them).
 *
 * - total: the open-files limit minus {@linkcode headroom}, at least 16;
 * - per IP: a quarter of the total, so that one address can never take every slot;
 * - HTTP per IP: a tenth of `max_http_connections` (issue 28);
 * - unauthenticated MQTT per IP: half the per-IP cap (issue 28).
 *
 * @example
 * resolveConnCaps(config.limits, 1024); // { total: 921, perIp: 230, ... }
 */
export function resolveConnCaps(
  limits: Pick<
    LimitsConfig,
    | "max_connections"
    | "max_connections_per_ip"
    | "max_clients"
    | "max_http_connections"
    | "max_http_connections_per_ip"
    | "max_unauthenticated_per_ip"
  >,
  fdLimit: number | null,
): ConnCaps {
  const warnings: string[] = [];
  const auto = fdLimit === null ? FALLBACK_TOTAL : Math.max(16, fdLimit - headroom(fdLimit));
  const total = limits.max_connections === 0 ? auto : limits.max_connections;
  if (limits.max_connections !== 0 && fdLimit !== null && total > auto) {
    warnings.push(
      `limits.max_connections ${total} leaves less than ${headroom(fdLimit)} descriptors of ` +
        `headroom below the open-files limit ${fdLimit}: raise LimitNOFILE (ulimit -n)`,
    );
  }
  const perIp = limits.max_connections_per_ip === 0
    ? Math.max(1, Math.floor(total / 4))
    : Math.min(limits.max_connections_per_ip, total);
  if (limits.max_clients > total) {
    warnings.push(
      `limits.max_clients ${limits.max_clients} cannot be reached: at most ${total} connections ` +
        (fdLimit === null ? "are allowed" : `fit the open-files limit ${fdLimit}`) +
        "; raise LimitNOFILE (ulimit -n)",
    );
  }
  const httpPerIp = limits.max_http_connections_per_ip === 0
    ? Math.max(1, Math.floor(limits.max_http_connections / 10))
    : limits.max_http_connections_per_ip;
  const unauthenticatedPerIp = limits.max_unauthenticated_per_ip === 0
    ? Math.max(1, Math.floor(perIp / 2))
    : limits.max_unauthenticated_per_ip;
  return { fdLimit, total, perIp, httpPerIp, unauthenticatedPerIp, warnings };
}

/** Repeated refusals are logged at most this often, per reason. */
const REFUSAL_LOG_MS = 10_000;

/** Counts open connections and refuses those past a cap. */
export class ConnLimiter {
  readonly caps: ConnCaps;
  readonly #log: Logger;
  readonly #byIp: AddressShare;
  #open = 0;
  readonly #refusals = {
    total_cap: { count: 0, last: -Infinity },
    ip_cap: { count: 0, last: -Infinity },
  };

  constructor(caps: ConnCaps, log: Logger) {
    this.caps = caps;
    this.#log = log;
    this.#byIp = new AddressShare(caps.perIp);
  }

  /** Connections open now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Takes a slot for a new TCP connection from `ip` (null: a trusted proxy, which is only
   * counted in the total). Returns the release function, or null when a cap refuses it; the
   * refusal is then counted and logged.
   */
  openConnection(ip: string | null): (() => void) | null {
    if (this.#open >= this.caps.total) {
      this.#refuse("total_cap", ip ?? "");
      return null;
    }
    const releaseIp = ip === null ? () => {} : this.takeIp(ip);
    if (releaseIp === null) return null;
    this.#open++;
    setOpenConnections(this.#open);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      setOpenConnections(this.#open);
      releaseIp();
    };
  }

  /**
   * Takes a per-IP slot only: for a client behind a trusted proxy, whose TCP connection was
   * counted in the total. Returns null (counted and logged) when `ip` is at its cap.
   */
  takeIp(ip: string): (() => void) | null {
    const release = this.#byIp.take(ip);
    if (release === null) this.#refuse("ip_cap", ip);
    return release;
  }

  #refuse(reason: "total_cap" | "ip_cap", remote: string): void {
    countClosedConnection(reason);
    const r = this.#refusals[reason];
    r.count++;
    const now = Date.now();
    if (now - r.last < REFUSAL_LOG_MS) return;
    r.last = now;
    // spec 12: an address is fine to log; it is what an operator needs to act on a flood.
    this.#log.warn(
      reason === "total_cap"
        ? "Connection refused: too many connections open"
        : "Connection refused: too many connections from one address",
      {
        remote,
        open: this.#open,
        max_connections: this.caps.total,
        max_connections_per_ip: this.caps.perIp,
        refused: r.count,
      },
    );
    r.count = 0;
  }
}
