/** Helpers for the listener and router tests: certificates, configs, clients, waiting. */
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { type IncomingHttpHeaders, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { join } from "node:path";
import { DEFAULT_CONFIG } from "../config/config.ts";
import type { Config } from "../config/types.ts";
import { Logger } from "../log/log.ts";

/** True when the `openssl` CLI is on PATH; the TLS tests need it to make certificates. */
export const HAS_OPENSSL = (() => {
  try {
    return new Deno.Command("which", { args: ["openssl"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

/** True when this machine can bind the IPv6 loopback (some containers cannot). */
export const HAS_IPV6 = (() => {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return true;
  } catch {
    return false;
  }
})();

/** A self-signed certificate written to files. */
export interface TestCert {
  readonly certFile: string;
  readonly keyFile: string;
  readonly pem: string;
  readonly fingerprint256: string;
}

/**
 * Makes a self-signed P-256 certificate for 127.0.0.1 and localhost in `dir`. It is not a CA, so
 * rustls-based clients accept it as a trust anchor for itself.
 */
export async function makeCert(dir: string, name: string): Promise<TestCert> {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`Run openssl: ${new TextDecoder().decode(out.stderr)}`);
  const pem = readFileSync(certFile, "utf8");
  return { certFile, keyFile, pem, fingerprint256: new X509Certificate(pem).fingerprint256 };
}

/** Partial settings merged over the defaults by {@linkcode testConfig}. */
export interface TestConfigOverrides {
  readonly listen?: string;
  readonly admin_listen?: string;
  readonly data_dir: string;
  readonly trusted_proxies?: readonly string[];
  readonly tls?: Partial<Config["tls"]>;
  readonly first_byte_seconds?: number;
  readonly timeouts?: Partial<Config["timeouts"]>;
  readonly limits?: Partial<Config["limits"]>;
}

/** A config on 127.0.0.1 port 0 with a short first-byte timeout. */
export function testConfig(o: TestConfigOverrides): Config {
  return {
    ...DEFAULT_CONFIG,
    listen: o.listen ?? "127.0.0.1:0",
    admin_listen: o.admin_listen ?? "",
    data_dir: o.data_dir,
    trusted_proxies: o.trusted_proxies ?? [],
    tls: { ...DEFAULT_CONFIG.tls, ...o.tls },
    timeouts: {
      ...DEFAULT_CONFIG.timeouts,
      first_byte_seconds: o.first_byte_seconds ?? 2,
      ...o.timeouts,
    },
    limits: { ...DEFAULT_CONFIG.limits, ...o.limits },
  };
}

/** A logger that keeps its lines, parsed, for assertions. */
export function memoryLog(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { log: new Logger("debug", {}, (line) => lines.push(JSON.parse(line))), lines };
}

/** Polls `check` every 10 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 3000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Wait for ${what}: timed out`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Opens a TCP connection, from `localAddress` when given (another loopback address). */
export function connectTcp(
  port: number,
  host = "127.0.0.1",
  localAddress?: string,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ port, host, localAddress }, () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/**
 * Settles like `promise`, or rejects when it has not settled within `timeoutMs`, so a broken
 * server fails the test instead of hanging it.
 */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = 5000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Wait for ${what}: timed out`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when `socket` has closed, with everything it received before; fails after 5 s. */
export function closeOf(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  socket.on("error", () => {});
  const closed = new Promise<Buffer>((resolve) => {
    if (socket.destroyed) return resolve(Buffer.concat(chunks));
    socket.once("close", () => resolve(Buffer.concat(chunks)));
  });
  return within(closed, "the connection to close").catch((err) => {
    socket.destroy();
    throw err;
  });
}

/** One HTTP response, body parsed as JSON when it is JSON. */
export interface TestResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  readonly json: unknown;
}

/** Options of {@linkcode fetchHttp}. */
export interface FetchOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  /** Use TLS, trusting nothing (the tests compare fingerprints instead). */
  readonly tls?: boolean;
  /** Defaults to 127.0.0.1. */
  readonly host?: string;
  /** The source address, e.g. 127.0.0.2 to appear as another client. */
  readonly localAddress?: string;
}

/** Sends one request on a fresh connection that closes afterwards (no agent, no pooling). */
export function fetchHttp(port: number, path: string, o: FetchOptions = {}): Promise<TestResponse> {
  const send = o.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send({
      host: o.host ?? "127.0.0.1",
      port,
      path,
      localAddress: o.localAddress,
      method: o.method ?? "GET",
      headers: { Connection: "close", ...o.headers },
      agent: false,
      rejectUnauthorized: false,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown = undefined;
        try {
          json = JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(o.body);
  });
}
