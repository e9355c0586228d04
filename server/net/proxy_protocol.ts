/**
 * The PROXY protocol, versions 2 (binary) and 1 (text), as HAProxy specifies it (issue 30 item 5).
 *
 * A load balancer in TCP mode (HAProxy `send-proxy-v2`) puts one header in front of the client's
 * bytes that names the client's address. The listener reads it only from peers inside
 * `trusted_proxies`; from any other peer a PROXY header closes the connection, so a client
 * cannot forge its address to dodge the lockouts and per-address caps (spec 5).
 *
 * What is read: the v2 commands LOCAL (a health check: the TCP peer is the client) and PROXY over
 * TCP/IPv4 and TCP/IPv6 (the source address is the client); the `PP2_TYPE_SSL` TLV's client bit
 * says the proxy terminated TLS for the client. Every other family (UNSPEC, UNIX, DGRAM) and v1
 * `UNKNOWN` keep the TCP peer, as the specification asks. Other TLVs are skipped after their
 * framing is checked.
 */
import type { Duplex } from "node:stream";
import { formatIp, parseIp } from "./ip.ts";
import { pauseData } from "./sniff.ts";

/** The 12 bytes every v2 header starts with. */
export const PROXY_V2_SIGNATURE: Uint8Array = new TextEncoder().encode("\r\n\r\n\0\r\nQUIT\n");
const V1_PREFIX = new TextEncoder().encode("PROXY ");
/** The longest v1 line, CRLF included (specification section 2.1). */
export const PROXY_V1_MAX_BYTES = 107;
/**
 * The longest v2 header accepted: 16 fixed bytes and up to 1,008 bytes of addresses and TLVs.
 * The format allows 65,535 bytes; HAProxy sends 28 (IPv4) or 52 (IPv6) plus a few TLVs, and a
 * header larger than this is refused rather than buffered.
 */
export const PROXY_V2_MAX_BYTES = 1024;

const V2_FIXED = 16;
const CMD_LOCAL = 0x0;
const CMD_PROXY = 0x1;
const AF_INET = 0x1;
const AF_INET6 = 0x2;
const PROTO_STREAM = 0x1;
const PP2_TYPE_SSL = 0x20;
const PP2_CLIENT_SSL = 0x01;

/** The client a valid header names; null `client` means "the TCP peer is the client". */
export interface ProxyHeader {
  readonly version: 1 | 2;
  /** The client's address (normalized, as {@linkcode formatIp} prints it), or null. */
  readonly client: string | null;
  /** True when the proxy says it received the client over TLS (v2 `PP2_TYPE_SSL`). */
  readonly secure: boolean;
}

/** What {@linkcode parseProxyHeader} made of the bytes read so far. */
export type ProxyParse =
  | { readonly status: "incomplete" }
  | { readonly status: "invalid"; readonly reason: string }
  | { readonly status: "done"; readonly length: number; readonly header: ProxyHeader };

const INCOMPLETE: ProxyParse = Object.freeze({ status: "incomplete" });

function invalid(reason: string): ProxyParse {
  return { status: "invalid", reason };
}

/** True when `buf` (possibly shorter) agrees with `prefix` over their common length. */
function agrees(buf: Uint8Array, prefix: Uint8Array): boolean {
  const n = Math.min(buf.length, prefix.length);
  for (let i = 0; i < n; i++) if (buf[i] !== prefix[i]) return false;
  return true;
}

/**
 * True when a connection's first byte may start a PROXY header: `\r` (v2) or `P` (v1, which an
 * HTTP `POST`, `PUT` or `PATCH` also starts with; {@linkcode startsLikeProxyHeader} decides).
 */
export function mayStartProxyHeader(byte: number): boolean {
  return byte === PROXY_V2_SIGNATURE[0] || byte === V1_PREFIX[0];
}

/**
 * True when `buf` is, or may still become, a PROXY header: it agrees with the v2 signature or
 * with `PROXY ` over its length. Used to wait for enough bytes before telling `POST` apart.
 */
export function startsLikeProxyHeader(buf: Uint8Array): boolean {
  return buf.length > 0 && (agrees(buf, PROXY_V2_SIGNATURE) || agrees(buf, V1_PREFIX));
}

/**
 * Parses the PROXY header at the start of `buf`. "incomplete" asks for more bytes; "invalid"
 * means the connection must be closed (the specification: never guess, never process the rest).
 *
 * @example
 * const r = parseProxyHeader(bytes);
 * if (r.status === "done") console.log(r.header.client, "then", bytes.subarray(r.length));
 */
export function parseProxyHeader(buf: Uint8Array): ProxyParse {
  if (buf.length === 0) return INCOMPLETE;
  if (buf[0] === PROXY_V2_SIGNATURE[0]) return parseV2(buf);
  if (buf[0] === V1_PREFIX[0]) return parseV1(buf);
  return invalid("not a PROXY header");
}

function parseV2(buf: Uint8Array): ProxyParse {
  if (!agrees(buf, PROXY_V2_SIGNATURE)) return invalid("bad v2 signature");
  if (buf.length < V2_FIXED) return INCOMPLETE;
  const version = buf[12] >> 4;
  const command = buf[12] & 0x0f;
  if (version !== 2) return invalid(`unsupported version ${version}`);
  if (command !== CMD_LOCAL && command !== CMD_PROXY) {
    return invalid(`unsupported command ${command}`);
  }
  const family = buf[13] >> 4;
  const proto = buf[13] & 0x0f;
  const bodyLength = (buf[14] << 8) | buf[15];
  const length = V2_FIXED + bodyLength;
  if (length > PROXY_V2_MAX_BYTES) return invalid(`header of ${length} bytes is too long`);
  if (buf.length < length) return INCOMPLETE;
  const body = buf.subarray(V2_FIXED, length);

  if (command === CMD_LOCAL) {
    return { status: "done", length, header: { version: 2, client: null, secure: false } };
  }
  let addrLength = 0;
  let client: string | null = null;
  if (proto === PROTO_STREAM && (family === AF_INET || family === AF_INET6)) {
    addrLength = family === AF_INET ? 12 : 36;
    if (bodyLength < addrLength) return invalid("address block shorter than its family");
    client = ipFromBytes(body.subarray(0, family === AF_INET ? 4 : 16));
  }
  // UNSPEC, UNIX and datagram families: the receiver uses the real connection endpoints.
  if (client === null) {
    return { status: "done", length, header: { version: 2, client: null, secure: false } };
  }
  const tlvs = readTlvs(body.subarray(addrLength));
  if (typeof tlvs === "string") return invalid(tlvs);
  return { status: "done", length, header: { version: 2, client, secure: tlvs.secure } };
}

/** Walks the TLVs; returns what was learnt, or why the framing is broken. */
function readTlvs(tlvs: Uint8Array): { secure: boolean } | string {
  let secure = false;
  let at = 0;
  while (at < tlvs.length) {
    if (tlvs.length - at < 3) return "truncated TLV";
    const type = tlvs[at];
    const len = (tlvs[at + 1] << 8) | tlvs[at + 2];
    const value = tlvs.subarray(at + 3, at + 3 + len);
    if (value.length !== len) return "TLV longer than the header";
    if (type === PP2_TYPE_SSL) {
      // client (1 byte), verify (4 bytes), then sub-TLVs.
      if (len < 5) return "PP2_TYPE_SSL shorter than 5 bytes";
      secure = (value[0] & PP2_CLIENT_SSL) !== 0;
    }
    at += 3 + len;
  }
  return { secure };
}

function ipFromBytes(b: Uint8Array): string {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16));
  const parsed = parseIp(groups.join(":"));
  // 16 bytes always make an IPv6 address; formatIp prints IPv4-mapped ones as IPv4.
  return parsed === null ? groups.join(":") : formatIp(parsed);
}

const DECIMAL_PORT = /^(0|[1-9]\d{0,4})$/;

function parseV1(buf: Uint8Array): ProxyParse {
  if (!agrees(buf, V1_PREFIX)) return invalid("bad v1 prefix");
  const lf = buf.indexOf(0x0a);
  if (lf === -1) {
    return buf.length >= PROXY_V1_MAX_BYTES ? invalid("v1 line too long") : INCOMPLETE;
  }
  const length = lf + 1;
  if (length > PROXY_V1_MAX_BYTES) return invalid("v1 line too long");
  if (buf[lf - 1] !== 0x0d) return invalid("v1 line not ended by CRLF");
  const line = new TextDecoder().decode(buf.subarray(0, lf - 1));
  const parts = line.split(" ");
  if (parts[1] === "UNKNOWN") {
    return { status: "done", length, header: { version: 1, client: null, secure: false } };
  }
  if (parts.length !== 6) return invalid("v1 line needs 6 fields");
  const [, family, src, dst, srcPort, dstPort] = parts;
  if (family !== "TCP4" && family !== "TCP6") return invalid("v1 family not TCP4/TCP6/UNKNOWN");
  for (const port of [srcPort, dstPort]) {
    if (!DECIMAL_PORT.test(port) || Number(port) > 65535) return invalid("bad v1 port");
  }
  const source = parseIp(src);
  const dest = parseIp(dst);
  const v4 = /^\d{1,3}(\.\d{1,3}){3}$/;
  const wantV4 = family === "TCP4";
  if (source === null || dest === null || v4.test(src) !== wantV4 || v4.test(dst) !== wantV4) {
    return invalid(`bad v1 ${family} address`);
  }
  return {
    status: "done",
    length,
    header: { version: 1, client: formatIp(source), secure: false },
  };
}

/** What {@linkcode readProxyHeader} got from a stream. */
export type ProxyRead =
  | { readonly ok: true; readonly header: ProxyHeader }
  | { readonly ok: false; readonly reason: string };

/**
 * Reads one PROXY header from `stream`, then leaves the stream paused with the bytes after it
 * unread (unshifted), like `sniffFirstByte`. Fails when the header is malformed, longer
 * than its bound, or not complete within `timeoutMs` (a slow proxy cannot hold the connection),
 * or when the stream ends first; the caller then closes it.
 */
export function readProxyHeader(stream: Duplex, timeoutMs: number): Promise<ProxyRead> {
  return new Promise((resolve) => {
    let buffered = new Uint8Array(0);
    const finish = (result: ProxyRead, rest: Uint8Array | null) => {
      clearTimeout(timer);
      stream.off("data", onData);
      stream.off("end", onGone);
      stream.off("close", onGone);
      stream.off("error", onGone);
      pauseData(stream);
      if (rest !== null && rest.length > 0) stream.unshift(rest);
      resolve(result);
    };
    const onData = (chunk: Uint8Array) => {
      const joined = new Uint8Array(buffered.length + chunk.length);
      joined.set(buffered);
      joined.set(chunk, buffered.length);
      buffered = joined;
      const r = parseProxyHeader(buffered);
      if (r.status === "incomplete") return;
      if (r.status === "invalid") return finish({ ok: false, reason: r.reason }, null);
      finish({ ok: true, header: r.header }, buffered.subarray(r.length));
    };
    const onGone = () =>
      finish({ ok: false, reason: "closed before the PROXY header ended" }, null);
    const timer = setTimeout(
      () => finish({ ok: false, reason: "PROXY header not complete in time" }, null),
      timeoutMs,
    );
    stream.on("data", onData);
    stream.once("end", onGone);
    stream.once("close", onGone);
    stream.once("error", onGone);
    stream.resume();
  });
}
