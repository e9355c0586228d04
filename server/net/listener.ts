/**
 * The one-port listener (spec 4.1-4.5): `listen`, and `admin_listen` when set.
 *
 * Both listeners share the TLS settings and the detection code. `listen` serves the client
 * scope (raw MQTT, WebSocket `/mqtt`, `/api/client/`) and the health checks, plus the admin
 * scope when `admin_listen` is empty; `admin_listen` serves the admin scope and the health checks.
 */
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Config } from "../config/types.ts";
import { sendError } from "../http/context.ts";
import type { HttpApp, Scope } from "../http/types.ts";
import type { Logger } from "../log/log.ts";
import { formatHostPort, type HostPort, parseListenAddress, writeAddressFile } from "./address.ts";
import { Acceptor } from "./acceptor.ts";
import { isTrustedProxy, parseTrustedProxies, peerInfo, type TrustedProxies } from "./client_ip.ts";
import { ConnLimiter, resolveConnCaps } from "./conn_caps.ts";
import { readOpenFilesLimit } from "./open_files_limit.ts";
import { ChurnGc, tuneMemory } from "./churn_gc.ts";
import { type ConnFacts, dispatchConnection, type DispatchSettings } from "./dispatch.ts";
import { HttpGuard } from "./http_guard.ts";
import { addressGroup, normalizeIp, parseIp } from "./ip.ts";
import { PreAuthGate } from "./pre_auth.ts";
import { RateLimiter } from "../auth/rate_limit.ts";
import { LogThrottle } from "../log/throttle.ts";
import { countChurnGc, countClosedConnection } from "../metrics/metrics.ts";
import { CertReloader } from "./tls_context.ts";
import type { MqttHandler, PeerInfo } from "./types.ts";
import { createWsUpgrader, type WsUpgrader } from "./ws_upgrade.ts";

export type { HttpApp } from "../http/types.ts";
export type { HostPort } from "./address.ts";

/** Options of {@linkcode startListeners}. */
export interface ListenerOptions {
  readonly config: Config;
  readonly log: Logger;
  readonly http: HttpApp;
  readonly onMqtt: MqttHandler;
}

/** The running listeners. */
export interface Listeners {
  /** The bound address of `listen` (the real port when configured as 0). */
  readonly listen: HostPort;
  /** The bound address of `admin_listen`, or null when it is not set. */
  readonly admin: HostPort | null;
  /** Reloads the certificate files now, changed or not; a failure keeps the old pair (logged). */
  reloadTlsNow(): Promise<void>;
  /**
   * Stops accepting new connections; open ones stay (spec 7.8: the first step of a shutdown, so
   * that responses can still leave before the connections are closed).
   */
  stopAccepting(): void;
  /** True while a listener cannot accept connections (issue 18: `/readyz` then fails). */
  acceptImpaired(): boolean;
  /** Stops accepting, destroys every open connection and stops the timers. */
  close(): Promise<void>;
}

/**
 * Idle time after which an HTTP connection is dropped, on top of the header and body deadlines
 * of {@linkcode HttpGuard}: it also covers a response the peer does not read.
 */
const HTTP_IDLE_MS = 120_000;

/** The scopes each listener serves (spec 4.3). */
export function listenerScopes(role: "listen" | "admin", split: boolean): ReadonlySet<Scope> {
  if (!split) return new Set<Scope>(["client", "admin", "health"]);
  return new Set<Scope>(role === "listen" ? ["client", "health"] : ["admin", "health"]);
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? "").split("?")[0];
}

interface Shared {
  readonly opts: ListenerOptions;
  readonly trusted: TrustedProxies;
  readonly certs: CertReloader | null;
  readonly ws: WsUpgrader;
  readonly open: Set<Duplex>;
  readonly limiter: ConnLimiter;
  /** The group an address counts in for every per-address rule (IPv6 by prefix, issue 28). */
  readonly group: (ip: string) => string;
  /** New connections per address group (issue 28), shared by the listeners. */
  readonly connRateIp: RateLimiter;
  readonly pre: PreAuthGate;
  /** The broker's handler behind the pre-login gate. */
  readonly onMqtt: MqttHandler;
  readonly throttle: LogThrottle;
  /** Frees dead connection buffers under churn (issue 28). */
  readonly churnGc: ChurnGc;
  /** False once `stopAccepting` ran. */
  readonly accepting: () => boolean;
}

interface Endpoint {
  readonly acceptor: Acceptor;
  readonly address: HostPort;
  readonly guard: HttpGuard;
}

/** True when the TCP peer `ip` is a trusted proxy, whose clients are told apart by headers. */
function isProxy(ip: string, trusted: TrustedProxies): boolean {
  const parsed = parseIp(ip);
  return parsed !== null && isTrustedProxy(parsed, trusted);
}

/**
 * For a request relayed by a trusted proxy, takes a per-IP slot of the client it names until
 * `done` fires (issue 18: the cap applies after the trusted-proxy rule). Direct peers were
 * counted when their TCP connection was accepted. Returns false when the client is at its cap.
 */
function proxiedClientSlot(
  socketIp: string,
  peer: PeerInfo,
  sh: Shared,
  done: { once(event: "close", fn: () => void): unknown },
): boolean {
  if (!isProxy(socketIp, sh.trusted) || isProxy(peer.remoteAddress, sh.trusted)) return true;
  const release = sh.limiter.takeIp(sh.group(peer.remoteAddress));
  if (release === null) return false;
  done.once("close", release);
  return true;
}

async function openEndpoint(
  role: "listen" | "admin",
  configured: string,
  scopes: ReadonlySet<Scope>,
  sh: Shared,
): Promise<Endpoint> {
  const { config, log, http: app } = sh.opts;
  const facts = new WeakMap<Duplex, ConnFacts>();
  const socketIp = (req: IncomingMessage): string =>
    facts.get(req.socket)?.remoteAddress ?? normalizeIp(req.socket.remoteAddress ?? "");
  const peerOf = (req: IncomingMessage): PeerInfo =>
    peerInfo(socketIp(req), req.headers, sh.trusted, facts.get(req.socket)?.secure ?? false);
  const mqttHere = scopes.has("client");

  const http = createHttpServer();
  http.timeout = HTTP_IDLE_MS;
  const headersMs = config.timeouts.http_headers_seconds * 1000;
  // Keep-alive. This server never listens: the acceptor hands it sockets. Deno's node:http
  // destroys a connection after every response when the server is not `listening` (checked with
  // Deno 2.9), although the response said `Connection: keep-alive`, so a client that reused it
  // got a reset. `listening` reports the acceptor instead: true until `stopAccepting`.
  Object.defineProperty(http, "listening", { get: sh.accepting, configurable: true });
  // The `Keep-Alive: timeout=` header then announces when the guard closes an idle connection.
  http.keepAliveTimeout = headersMs;
  const guard = new HttpGuard(http, {
    headersMs,
    bodyMs: config.timeouts.http_body_seconds * 1000,
    maxConnections: config.limits.max_http_connections,
    maxPerAddress: sh.limiter.caps.httpPerIp,
    group: sh.group,
    exempt: (ip) => isProxy(ip, sh.trusted),
    log,
  });
  http.on("request", (req, res) => {
    // Shutting down: say so, and close the connection after this response.
    if (!sh.accepting()) res.setHeader("Connection", "close");
    if (mqttHere && pathOf(req) === "/mqtt") {
      return sendError(res, 426, "bad_request", "WebSocket upgrade with subprotocol mqtt required");
    }
    const peer = peerOf(req);
    if (!proxiedClientSlot(socketIp(req), peer, sh, res)) {
      return sendError(res, 503, "busy", "Too many connections from this address");
    }
    void app.handle(req, res, { scopes, peer });
  });
  // spec 4.3: `/mqtt` exists only where the client scope is served.
  http.on("upgrade", (req, socket, head) => {
    if (!mqttHere || pathOf(req) !== "/mqtt") return socket.destroy();
    const peer = peerOf(req);
    if (!proxiedClientSlot(socketIp(req), peer, sh, socket)) {
      socket.end(
        "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      );
      return;
    }
    sh.ws.upgrade(req, socket, head, peer);
  });

  const certs = sh.certs;
  const settings: DispatchSettings = {
    firstByteMs: config.timeouts.first_byte_seconds * 1000,
    tls: certs === null
      ? null
      : { context: () => certs.context, allowPlaintext: config.tls.allow_plaintext },
    http,
    admitHttp: (stream, remote) => guard.admit(stream, remote),
    onMqtt: role === "listen" ? sh.onMqtt : null,
    facts,
    maxQueuedBytes: config.limits.max_queued_bytes,
    isTrustedProxy: (ip) => isProxy(ip, sh.trusted),
    // A client named by a trusted proxy's PROXY header counts against its own per-address cap
    // (its TCP connection was counted only in the total); a header naming a proxy takes none.
    takeClientSlot: (ip) => isProxy(ip, sh.trusted) ? () => {} : sh.limiter.takeIp(ip),
    track: (stream) => {
      sh.open.add(stream);
      stream.once("close", () => sh.open.delete(stream));
    },
    log,
  };
  // issue 28 (EMQX max_conn_rate): new connections per second on this listener.
  const connRate = new RateLimiter({ perSecond: config.limits.max_conn_rate });
  const refuseRate = (reason: "conn_rate" | "conn_rate_ip", ip: string) => {
    countClosedConnection(reason);
    sh.throttle.line(
      "warn",
      reason === "conn_rate"
        ? "Connection refused: too many new connections on this listener"
        : "Connection refused: too many new connections from one address",
      reason,
      { role, remote: ip },
      { role },
    );
  };
  const onSocket = (socket: Socket) => {
    socket.on("error", () => {});
    const ip = normalizeIp(socket.remoteAddress ?? "");
    const proxy = isProxy(ip, sh.trusted);
    // The address's own rate first, so one address's refusals never use up the listener's.
    if (!proxy && !sh.connRateIp.take(sh.group(ip))) {
      refuseRate("conn_rate_ip", ip);
      return void socket.destroy();
    }
    if (!connRate.take("")) {
      refuseRate("conn_rate", ip);
      return void socket.destroy();
    }
    // A trusted proxy carries many clients: only the total applies to its connections.
    const release = sh.limiter.openConnection(proxy ? null : sh.group(ip));
    if (release === null) return void socket.destroy();
    sh.churnGc.opened();
    socket.once("close", () => {
      release();
      sh.churnGc.closed();
    });
    void dispatchConnection(socket, settings);
  };
  const want = parseListenAddress(configured);
  const acceptor = await Acceptor.start({ role, host: want.host, port: want.port, onSocket, log });
  const address = acceptor.address;
  // spec 4.1: the launcher of a port-0 server reads the real address from these files.
  try {
    await writeAddressFile(config.data_dir, `${role}.addr`, address);
  } catch (err) {
    await acceptor.close();
    guard.close();
    throw err;
  }
  log.info("Listening", {
    role,
    address: formatHostPort(address.host, address.port),
    tls: certs !== null,
    scopes: [...scopes].join(","),
  });
  return { acceptor, address, guard };
}

/**
 * Opens `listen` and, when set, `admin_listen`; loads the certificate first. Rejects when a
 * port cannot be bound or the certificate cannot be loaded.
 *
 * @example
 * const listeners = await startListeners({ config, log, http: createRouter(routes, { log }), onMqtt });
 * console.log(listeners.listen.port);
 * await listeners.close();
 */
export async function startListeners(opts: ListenerOptions): Promise<Listeners> {
  const { config, log } = opts;
  const trusted = parseTrustedProxies(config.trusted_proxies);
  let certs: CertReloader | null = null;
  if (config.tls.cert_file !== "") {
    certs = await CertReloader.start({
      certFile: config.tls.cert_file,
      keyFile: config.tls.key_file,
      checkSeconds: config.tls.reload_check_seconds,
      log,
    });
  } else {
    log.warn("No TLS certificate configured: serving plaintext only");
  }
  const memory = tuneMemory();
  log.info("Memory settings", {
    mmap_threshold: memory.mmapThreshold,
    churn_gc: memory.churnGc,
    ...(memory.problem === null ? {} : { problem: memory.problem }),
  });
  const fdLimit = readOpenFilesLimit();
  if (fdLimit.problem !== null) {
    log.warn("Cannot read the open-files limit; connection caps use the fallback", {
      reason: fdLimit.problem,
    });
  }
  const caps = resolveConnCaps(config.limits, fdLimit.soft);
  log.info("Connection caps", {
    open_files_limit: caps.fdLimit,
    max_connections: caps.total,
    max_connections_per_ip: caps.perIp,
    max_http_connections_per_ip: caps.httpPerIp,
    max_unauthenticated_per_ip: caps.unauthenticatedPerIp,
  });
  for (const warning of caps.warnings) log.warn(warning);
  let accepting = true;
  const bits = config.limits.ipv6_prefix_bits;
  const group = (ip: string) => addressGroup(ip, bits);
  const pre = new PreAuthGate({
    perAddress: caps.unauthenticatedPerIp,
    deadlineMs: config.timeouts.auth_seconds * 1000,
    group,
    exempt: (ip) => isProxy(ip, trusted),
    log,
  });
  const onMqtt = pre.wrap(opts.onMqtt);
  const sh: Shared = {
    accepting: () => accepting,
    opts,
    limiter: new ConnLimiter(caps, log),
    group,
    // Bounded: an address group's bucket is only worth keeping while it is busy.
    connRateIp: new RateLimiter({ perSecond: config.limits.max_conn_rate_per_ip, maxKeys: 65536 }),
    pre,
    onMqtt,
    churnGc: new ChurnGc({ onRun: countChurnGc }),
    throttle: new LogThrottle(log),
    trusted,
    certs,
    ws: createWsUpgrader({
      onMqtt,
      log,
      maxQueuedBytes: config.limits.max_queued_bytes,
    }),
    open: new Set(),
  };

  const split = config.admin_listen !== "";
  const endpoints: Endpoint[] = [];
  // `server.close` calls back only once every accepted connection has ended.
  const closing: Promise<void>[] = [];
  const stopAccepting = () => {
    if (!accepting) return;
    accepting = false;
    for (const e of endpoints) closing.push(e.acceptor.close());
  };
  const close = async () => {
    certs?.close();
    stopAccepting();
    for (const stream of sh.open) stream.destroy();
    sh.open.clear();
    await Promise.all(closing);
    for (const e of endpoints) e.guard.close();
    sh.ws.close();
    sh.pre.close();
    sh.throttle.close();
    sh.churnGc.close();
  };
  try {
    endpoints.push(
      await openEndpoint("listen", config.listen, listenerScopes("listen", split), sh),
    );
    if (split) {
      const scopes = listenerScopes("admin", split);
      endpoints.push(await openEndpoint("admin", config.admin_listen, scopes, sh));
    }
  } catch (err) {
    await close();
    throw err;
  }

  return {
    listen: endpoints[0].address,
    admin: split ? endpoints[1].address : null,
    acceptImpaired: () => endpoints.some((e) => e.acceptor.impaired),
    reloadTlsNow: async () => {
      await certs?.reload();
    },
    stopAccepting,
    close,
  };
}
