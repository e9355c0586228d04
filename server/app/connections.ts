import type { SerialQueue } from "./serial_queue.ts";

/** One MQTT connection as the app layer tracks it (spec 7.7 "内存里的连接表"). */
export interface Conn {
  /** The random connection code written to `deliveries.pushed_conn` (spec 5 连接代号). */
  readonly code: string;
  readonly endpointId: string;
  readonly transport: "tcp" | "ws";
  readonly remoteAddress: string;
  readonly protocolVersion: 4 | 5;
  /** CONNECT Maximum Packet Size, or null. */
  readonly maxPacketSize: number | null;
  /** The token issued by a password login, handed out once in the `hello` response (spec 6.1). */
  issuedToken: string | null;
  subscribed: boolean;
  handshaken: boolean;
  /**
   * The endpoint's `online_since` its handshake committed: the login revision a cluster node
   * compares with another node's login (issue 30). Unset before the handshake.
   */
  onlineSince?: number;
  /**
   * Whether the store had the endpoint online already when this handshake committed (logged in
   * on another node, issue 30): the other nodes' watchers then hear no second online.
   */
  wasOnline?: boolean;
  /** `hello.max_receive_bytes`, or null for no limit (spec 6.1). */
  maxReceiveBytes: number | null;
  helloTimer: ReturnType<typeof setTimeout> | null;
  queue: SerialQueue<Uint8Array> | null;
  closed: boolean;
  /**
   * An admin close (`fatal` or kick) of this connection is under way: a second one (a cluster
   * node's store poll after the NATS notice, or two admin actions) does nothing.
   */
  closing?: boolean;
}

/**
 * Connections by code, plus the current connection of each endpoint. A takeover makes the new
 * connection current before the old one's disconnect arrives; the old one's late disconnect then
 * finds it is no longer current and must not mark the endpoint offline (spec 5, 15).
 */
export class ConnectionTable {
  #byCode = new Map<string, Conn>();
  #current = new Map<string, string>();

  /** Adds `conn` and makes it its endpoint's current connection. */
  add(conn: Conn): void {
    this.#byCode.set(conn.code, conn);
    this.#current.set(conn.endpointId, conn.code);
  }

  get(code: string): Conn | undefined {
    return this.#byCode.get(code);
  }

  /** The endpoint's current connection, handshaken or not. */
  current(endpointId: string): Conn | undefined {
    const code = this.#current.get(endpointId);
    return code === undefined ? undefined : this.#byCode.get(code);
  }

  /** True when `code` is the endpoint's current connection. */
  isCurrent(endpointId: string, code: string): boolean {
    return this.#current.get(endpointId) === code;
  }

  /** Removes a connection; reports whether it was its endpoint's current one. */
  remove(code: string): { conn: Conn; wasCurrent: boolean } | null {
    const conn = this.#byCode.get(code);
    if (!conn) return null;
    this.#byCode.delete(code);
    const wasCurrent = this.#current.get(conn.endpointId) === code;
    if (wasCurrent) this.#current.delete(conn.endpointId);
    return { conn, wasCurrent };
  }

  /** Every tracked connection. */
  all(): IterableIterator<Conn> {
    return this.#byCode.values();
  }

  get size(): number {
    return this.#byCode.size;
  }
}
