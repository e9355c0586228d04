/**
 * The one-port listener (spec 4.1-4.5): `listen`, and `admin_listen` when set.
 *
 * Both listeners share the TLS settings and the detection code. `listen` serves the client
 * scope (raw MQTT, WebSocket `/mqtt`, `/api/client/`) and the health checks, plus the admin
 * scope when `admin_listen` is empty; `admin_listen` serves the admin scope and the health checks.
 */
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { type AddressInfo, createServer as createNetServer, type Server } from "node:net";
import type { Duplex } from "node:stream";
import type { Config } from "../config/types.ts";
import { sendError } from "../http/context.ts";
import type { HttpApp, Scope } from "../http/types.ts";
import type { Logger } from "../log/log.ts";
import { formatHostPort, type HostPort, parseListenAddress, writeAddressFile } from "./address.ts";
import { parseTrustedProxies, peerInfo, type TrustedProxies } from "./client_ip.ts";
import { type ConnFacts, dispatchConnection, type DispatchSettings } from "./dispatch.ts";
import { normalizeIp } from "./ip.ts";
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
  /** Stops accepting, destroys every open connection and stops the timers. */
  close(): Promise<void>;
}

/** Idle time after which an HTTP connection is dropped. Long enough for a slow CSV import. */
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
}

interface Endpoint {
  readonly server: Server;
  readonly address: HostPort;
}

async function openEndpoint(
  role: "listen" | "admin",
  configured: string,
  scopes: ReadonlySet<Scope>,
  sh: Shared,
): Promise<Endpoint> {
  const { config, log, http: app } = sh.opts;
  const facts = new WeakMap<Duplex, ConnFacts>();
  const peerOf = (req: IncomingMessage): PeerInfo => {
    const f = facts.get(req.socket) ??
      { remoteAddress: normalizeIp(req.socket.remoteAddress ?? ""), secure: false };
    return peerInfo(f.remoteAddress, req.headers, sh.trusted, f.secure);
  };
  const mqttHere = scopes.has("client");

  const http = createHttpServer();
  http.timeout = HTTP_IDLE_MS;
  http.on("request", (req, res) => {
    if (mqttHere && pathOf(req) === "/mqtt") {
      return sendError(res, 426, "bad_request", "WebSocket upgrade with subprotocol mqtt required");
    }
    void app.handle(req, res, { scopes, peer: peerOf(req) });
  });
  // spec 4.3: `/mqtt` exists only where the client scope is served.
  http.on("upgrade", (req, socket, head) => {
    if (!mqttHere || pathOf(req) !== "/mqtt") return socket.destroy();
    sh.ws.upgrade(req, socket, head, peerOf(req));
  });

  const certs = sh.certs;
  const settings: DispatchSettings = {
    firstByteMs: config.timeouts.first_byte_seconds * 1000,
    tls: certs === null
      ? null
      : { context: () => certs.context, allowPlaintext: config.tls.allow_plaintext },
    http,
    onMqtt: role === "listen" ? sh.opts.onMqtt : null,
    facts,
    track: (stream) => {
      sh.open.add(stream);
      stream.once("close", () => sh.open.delete(stream));
    },
    log,
  };
  const server = createNetServer((socket) => void dispatchConnection(socket, settings));

  const want = parseListenAddress(configured);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(want.port, want.host === "" ? undefined : want.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (err) => log.error("Listener error", { role, error: err.message }));
  const bound = server.address() as AddressInfo;
  const address = { host: bound.address, port: bound.port };
  // spec 4.1: the launcher of a port-0 server reads the real address from these files.
  try {
    await writeAddressFile(config.data_dir, `${role}.addr`, address);
  } catch (err) {
    await closeServer(server);
    throw err;
  }
  log.info("Listening", {
    role,
    address: formatHostPort(address.host, address.port),
    tls: certs !== null,
    scopes: [...scopes].join(","),
  });
  return { server, address };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
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
  const sh: Shared = {
    opts,
    trusted,
    certs,
    ws: createWsUpgrader({ onMqtt: opts.onMqtt, log }),
    open: new Set(),
  };

  const split = config.admin_listen !== "";
  const endpoints: Endpoint[] = [];
  // `server.close` calls back only once every accepted connection has ended.
  const closing: Promise<void>[] = [];
  const stopAccepting = () => {
    for (const e of endpoints) if (e.server.listening) closing.push(closeServer(e.server));
  };
  const close = async () => {
    certs?.close();
    stopAccepting();
    for (const stream of sh.open) stream.destroy();
    sh.open.clear();
    await Promise.all(closing);
    sh.ws.close();
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
    reloadTlsNow: async () => {
      await certs?.reload();
    },
    stopAccepting,
    close,
  };
}
