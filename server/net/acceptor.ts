/**
 * A TCP listening socket that keeps accepting (issue 18 item 1).
 *
 * When the process runs out of file descriptors (EMFILE/ENFILE), Deno's node:net server stops
 * accepting for good, with no error event (checked with Deno 2.9). So each listener is watched:
 * when nothing was accepted during an interval, the acceptor connects to itself. If that
 * connection is not accepted in time (or cannot even be opened), accepting is impaired: a warning
 * is logged, `/readyz` fails, and the socket is closed and opened again on the same address
 * until a probe gets through, which is logged as the end of the outage.
 */
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import type { Logger } from "../log/log.ts";
import { setAcceptImpaired } from "../metrics/metrics.ts";
import type { HostPort } from "./address.ts";

/** Options of {@linkcode Acceptor.start}. */
export interface AcceptorOptions {
  /** `listen` or `admin`: named in logs and metrics. */
  readonly role: string;
  readonly host: string;
  readonly port: number;
  readonly onSocket: (socket: Socket) => void;
  readonly log: Logger;
  /** How often the listener is checked while healthy (ms). */
  readonly checkMs?: number;
  /** How long a probe connection may wait to be accepted (ms). */
  readonly probeMs?: number;
}

const CHECK_MS = 2000;
const IMPAIRED_CHECK_MS = 1000;
const PROBE_MS = 2000;
/**
 * The accept queue length asked of the kernel, which caps it at `net.core.somaxconn` (4096 by
 * default since Linux 5.4). Node's default of 511 drops the SYNs of a reconnect storm after a
 * restart while the event loop is busy, and each dropped client waits 1 s or more to retry
 * (issue 19: thousands of clients at once).
 */
export const LISTEN_BACKLOG = 65535;

/** One listening socket with its accept watchdog. */
export class Acceptor {
  readonly #o: AcceptorOptions;
  #server: Server;
  #address: HostPort = { host: "", port: 0 };
  #accepted = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #impairedSince: number | null = null;
  /** The accept count at the last check. */
  #lastSeen = -1;
  /** Failed probes in a row. */
  #missed = 0;
  /** Ends the probe in flight, if any, with its outcome. */
  #probing: ((problem: string | null) => void) | null = null;

  private constructor(o: AcceptorOptions) {
    this.#o = o;
    this.#server = this.#create();
  }

  /** Binds `host:port` and starts watching. Rejects when the address cannot be bound. */
  static async start(o: AcceptorOptions): Promise<Acceptor> {
    const a = new Acceptor(o);
    await a.#listen(o.host, o.port);
    const bound = a.#server.address() as AddressInfo;
    a.#address = { host: bound.address, port: bound.port };
    a.#schedule(o.checkMs ?? CHECK_MS);
    return a;
  }

  /** The bound address (the real port when 0 was asked for). */
  get address(): HostPort {
    return this.#address;
  }

  /** True while the last check found that connections are not being accepted. */
  get impaired(): boolean {
    return this.#impairedSince !== null;
  }

  /** Stops accepting and watching; open connections are left to their owners. */
  close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#probing?.("closed");
    setAcceptImpaired(this.#o.role, false);
    return closeServer(this.#server);
  }

  #create(): Server {
    const server = createServer((socket) => {
      this.#accepted++;
      this.#probing?.(null);
      this.#o.onSocket(socket);
    });
    server.on("error", (err) => {
      this.#o.log.error("Listener error", { role: this.#o.role, error: err.message });
    });
    return server;
  }

  #listen(host: string, port: number): Promise<void> {
    const server = this.#server;
    return new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      const options = { port, host: host === "" ? undefined : host, backlog: LISTEN_BACKLOG };
      server.listen(options, () => {
        server.off("error", reject);
        resolve();
      });
    });
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#check(), ms);
  }

  async #check(): Promise<void> {
    const before = this.#accepted;
    let problem: string | null = null;
    // Anything accepted since the last check proves the socket works; else ask it directly.
    if (this.#lastSeen === before) problem = await this.#probe();
    this.#lastSeen = this.#accepted;
    if (this.#closed) return;
    if (problem === null) {
      this.#missed = 0;
      this.#recovered();
      this.#schedule(this.#o.checkMs ?? CHECK_MS);
      return;
    }
    // A probe not accepted in time may only mean a busy event loop: act on the second one in a
    // row, unless the probe could not even get a descriptor.
    this.#missed++;
    if (this.#impairedSince === null && this.#missed < 2 && !/EMFILE|ENFILE/.test(problem)) {
      this.#schedule(IMPAIRED_CHECK_MS);
      return;
    }
    this.#impaired(problem);
    await this.#relisten();
    this.#schedule(IMPAIRED_CHECK_MS);
  }

  /** Connects to this listener; resolves null once it was accepted, else what went wrong. */
  #probe(): Promise<string | null> {
    const { host, port } = dialable(this.#address);
    return new Promise((resolve) => {
      let socket: Socket | null = null;
      let done = false;
      const finish = (problem: string | null) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.#probing = null;
        socket?.destroy();
        resolve(problem);
      };
      // Any accept proves the socket works, the probe's own or another client's.
      this.#probing = finish;
      const timer = setTimeout(
        () => finish("a test connection was not accepted"),
        this.#o.probeMs ?? PROBE_MS,
      );
      try {
        socket = connect({ host, port });
        socket.on("error", (err) => finish(`a test connection failed: ${err.message}`));
      } catch (err) {
        finish(`a test connection failed: ${(err as Error).message}`);
      }
    });
  }

  #impaired(problem: string): void {
    if (this.#impairedSince !== null) return;
    this.#impairedSince = Date.now();
    setAcceptImpaired(this.#o.role, true);
    this.#o.log.warn("Accepting connections impaired; reopening the listener", {
      role: this.#o.role,
      problem,
    });
  }

  #recovered(): void {
    if (this.#impairedSince === null) return;
    const ms = Date.now() - this.#impairedSince;
    this.#impairedSince = null;
    setAcceptImpaired(this.#o.role, false);
    this.#o.log.info("Accepting connections again", { role: this.#o.role, outage_ms: ms });
  }

  /** Replaces the listening socket; a failure (no descriptor yet) is retried on the next check. */
  async #relisten(): Promise<void> {
    const old = this.#server;
    void closeServer(old);
    this.#server = this.#create();
    try {
      await this.#listen(this.#address.host, this.#address.port);
    } catch (err) {
      this.#o.log.debug("Reopening the listener failed; retrying", {
        role: this.#o.role,
        error: (err as Error).message,
      });
    }
    // close() ran while the new socket was being opened: it must not stay open.
    if (this.#closed) await closeServer(this.#server);
  }
}

/** Where a probe connects: the bound address, or loopback for a wildcard. */
function dialable(a: HostPort): HostPort {
  if (a.host === "0.0.0.0") return { host: "127.0.0.1", port: a.port };
  if (a.host === "::") return { host: "::1", port: a.port };
  return a;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}
