/**
 * What happens to one accepted TCP connection (spec 4.2): sniff the first byte, unwrap TLS and
 * sniff again, then hand the connection to HTTP or MQTT, or close it.
 */
import type { Server as HttpServer } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type SecureContext, TLSSocket } from "node:tls";
import type { Logger } from "../log/log.ts";
import { countClosedConnection } from "../metrics/metrics.ts";
import { normalizeIp } from "./ip.ts";
import { capQueuedBytes, logSlowConsumer } from "./queue_cap.ts";
import { connectTooLarge } from "./mqtt_head.ts";
import { mayStartProxyHeader, readProxyHeader, startsLikeProxyHeader } from "./proxy_protocol.ts";
import { classifyFirstByte, HEAD_BYTES, sniffFirstChunk, sniffHead } from "./sniff.ts";
import type { MqttHandler } from "./types.ts";

/** The TCP facts of a connection handed to the HTTP server, looked up by its request handler. */
export interface ConnFacts {
  readonly remoteAddress: string;
  readonly secure: boolean;
}

/** Everything one listener needs to route its connections. */
export interface DispatchSettings {
  /** Closes a connection that sends no first byte within this long (spec 4.2: 10 s). */
  readonly firstByteMs: number;
  /** The TLS side; null when no certificate is configured (plaintext only). */
  readonly tls: { readonly context: () => SecureContext; readonly allowPlaintext: boolean } | null;
  readonly http: HttpServer;
  /** Takes a connection for HTTP; false when HTTP is at its connection cap (then dropped). */
  readonly admitHttp: (stream: Socket, remoteAddress: string) => boolean;
  /** Receives raw MQTT; null on `admin_listen`, where a 0x10 first byte is closed (spec 4.2). */
  readonly onMqtt: MqttHandler | null;
  readonly facts: WeakMap<Duplex, ConnFacts>;
  /** Registers a stream so that closing the listener destroys it. */
  readonly track: (stream: Duplex) => void;
  /** Most bytes queued for one MQTT connection before it is closed as a slow consumer. */
  readonly maxQueuedBytes: number;
  /**
   * True when the TCP peer `ip` is in `trusted_proxies`: only then is a PROXY protocol header
   * read (issue 30); from any other peer it closes the connection.
   */
  readonly isTrustedProxy: (ip: string) => boolean;
  /**
   * Takes a per-address slot for the client a PROXY header names, released by the returned
   * function; null when that client is at its cap (the connection is then dropped).
   */
  readonly takeClientSlot: (ip: string) => (() => void) | null;
  readonly log: Logger;
}

/**
 * Routes one accepted socket. Never rejects; every path that does not hand the connection on
 * destroys it.
 *
 * @example
 * netServer.on("connection", (socket) => void dispatchConnection(socket, settings));
 */
export async function dispatchConnection(raw: Socket, s: DispatchSettings): Promise<void> {
  s.track(raw);
  raw.on("error", (err) => s.log.debug("Connection error", { error: err.message }));
  raw.setNoDelay(true);
  const peerAddress = raw.remoteAddress === undefined ? "" : normalizeIp(raw.remoteAddress);
  let remoteAddress = peerAddress;
  const drop = (reason: string, extra: Record<string, number> = {}): void => {
    s.log.debug("Connection closed", {
      reason,
      remote: remoteAddress,
      peer: peerAddress,
      ...extra,
    });
    raw.destroy();
  };

  const chunk = await sniffFirstChunk(raw, s.firstByteMs);
  if (chunk === null) return drop("no first byte");
  let head: Uint8Array = Uint8Array.from(chunk.subarray(0, HEAD_BYTES));
  let first = head[0];
  let proxySecure = false;
  if (mayStartProxyHeader(first) && startsLikeProxyHeader(chunk)) {
    if (!s.isTrustedProxy(peerAddress)) return drop("PROXY header from an untrusted peer");
    // The header gets the first-byte deadline, and so does the client's first byte after it.
    const read = await readProxyHeader(raw, s.firstByteMs);
    if (!read.ok) return drop(`bad PROXY header: ${read.reason}`);
    if (read.header.client !== null) {
      remoteAddress = read.header.client;
      const release = s.takeClientSlot(remoteAddress);
      if (release === null) return drop("too many connections from this address");
      raw.once("close", release);
    }
    proxySecure = read.header.secure;
    const after = await sniffHead(raw, s.firstByteMs);
    if (after === null) return drop("no first byte after the PROXY header");
    head = after;
    first = head[0];
  }
  const kind = classifyFirstByte(first);
  if (kind !== "tls") {
    // A proxy that terminated TLS for the client says so in the PROXY header.
    if (s.tls !== null && !s.tls.allowPlaintext && !proxySecure) {
      return drop("plaintext refused", { first });
    }
    return handOff(raw, raw, head, { remoteAddress, secure: proxySecure }, s, drop);
  }
  if (s.tls === null) return drop("TLS without a certificate");

  // Not setting ALPNProtocols: a client that offers only `mqtt` must still connect (spec 4.2).
  const tls = new TLSSocket(raw, { isServer: true, secureContext: s.tls.context() });
  s.track(tls);
  tls.on("error", (err) => {
    s.log.debug("TLS connection error", { error: err.message, remote: remoteAddress });
    raw.destroy();
  });
  // The timer also covers a handshake that never completes.
  const inner = await sniffHead(tls, s.firstByteMs);
  if (inner === null) {
    tls.destroy();
    return drop("no first byte after TLS");
  }
  const closeBoth = (reason: string, extra?: Record<string, number>) => {
    tls.destroy();
    drop(reason, extra);
  };
  if (classifyFirstByte(inner[0]) === "tls") return closeBoth("TLS inside TLS");
  handOff(tls, raw, inner, { remoteAddress, secure: true }, s, closeBoth);
}

/**
 * Hands a sniffed plaintext stream (raw, or decrypted TLS over `raw`) to HTTP or MQTT, or drops
 * it.
 */
function handOff(
  stream: Socket,
  raw: Socket,
  head: Uint8Array,
  facts: ConnFacts,
  s: DispatchSettings,
  drop: (reason: string, extra?: Record<string, number>) => void,
): void {
  const first = head[0];
  const kind = classifyFirstByte(first);
  if (kind === "http") {
    if (!s.admitHttp(stream, facts.remoteAddress)) return drop("too many HTTP connections");
    s.facts.set(stream, facts);
    s.http.emit("connection", stream);
    stream.resume();
    return;
  }
  if (kind !== "mqtt") return drop("unknown first byte", { first });
  if (s.onMqtt === null) return drop("MQTT on admin_listen");
  // issue 28: a CONNECT too large for a real login is not even handed to the broker.
  if (connectTooLarge(head)) {
    countClosedConnection("connect_size");
    return drop("CONNECT too large");
  }
  // issue 10: a client that stops reading may not pin the memory of its queued packets.
  capQueuedBytes(stream, {
    maxBytes: s.maxQueuedBytes,
    queued: () => stream.writableLength + (raw === stream ? 0 : raw.writableLength),
    onOver: (queued) =>
      logSlowConsumer(s.log, "tcp", facts.remoteAddress, queued, s.maxQueuedBytes),
  });
  try {
    s.onMqtt({ transport: "tcp", stream, ...facts });
  } catch (err) {
    s.log.error("MQTT handler failed on a TCP connection", { error: String(err) });
    drop("MQTT handler failed");
  }
}
