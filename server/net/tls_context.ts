/**
 * The server certificate, loaded from files and reloaded when they change (spec 4.2, 11.3).
 *
 * The files' modification times are checked every `reload_check_seconds`. A changed pair is
 * loaded for new connections only; established connections keep the context they were made
 * with. A pair that fails to load leaves the old one in use and logs an error.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { Buffer } from "node:buffer";
import { readFile, stat } from "node:fs/promises";
import { createSecureContext, type SecureContext } from "node:tls";
import type { Logger } from "../log/log.ts";

/** One loaded certificate pair. */
export interface LoadedCert {
  readonly context: SecureContext;
  /** SHA-256 fingerprint of the leaf certificate, `AB:CD:…`. */
  readonly fingerprint256: string;
  readonly validTo: string;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reads and checks a certificate chain and its private key. Throws when either file cannot be
 * read or parsed, or the key does not belong to the certificate. Deno's `createSecureContext`
 * accepts anything, so the pair is checked here with `X509Certificate`.
 *
 * @example
 * const { context } = await loadCertPair("certs/fullchain.pem", "certs/privkey.pem");
 */
export async function loadCertPair(certFile: string, keyFile: string): Promise<LoadedCert> {
  let cert: Buffer;
  let key: Buffer;
  try {
    [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  } catch (err) {
    throw new Error(`Read TLS certificate files: ${describe(err)}`);
  }
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`Parse TLS certificate ${certFile}: ${describe(err)}`);
  }
  let matches: boolean;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new Error(`Parse TLS private key ${keyFile}: ${describe(err)}`);
  }
  if (!matches) throw new Error(`Check TLS key ${keyFile}: it does not match ${certFile}`);
  return {
    context: createSecureContext({ cert, key }),
    fingerprint256: leaf.fingerprint256,
    validTo: leaf.validTo,
  };
}

/** What identifies one version of a file without reading it. */
async function fileStamp(path: string): Promise<string> {
  const s = await stat(path, { bigint: true });
  return `${s.mtimeNs}/${s.size}/${s.ino}`;
}

/** Options of {@linkcode CertReloader.start}. */
export interface CertReloaderOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Seconds between checks of the files' modification times; 0 turns the timer off. */
  readonly checkSeconds: number;
  readonly log: Logger;
}

/** Holds the current certificate and swaps in a new one when the files change. */
export class CertReloader {
  #opts: CertReloaderOptions;
  #current: LoadedCert;
  #stamp: string;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<boolean> | undefined;

  private constructor(opts: CertReloaderOptions, current: LoadedCert, stamp: string) {
    this.#opts = opts;
    this.#current = current;
    this.#stamp = stamp;
  }

  /**
   * Loads the pair and starts the check timer. Throws when the pair cannot be loaded: a bad
   * certificate at start-up is a start-up error.
   *
   * @example
   * const certs = await CertReloader.start({ certFile, keyFile, checkSeconds: 3600, log });
   * new TLSSocket(socket, { isServer: true, secureContext: certs.context });
   */
  static async start(opts: CertReloaderOptions): Promise<CertReloader> {
    const stamp = await CertReloader.#stampOf(opts);
    const reloader = new CertReloader(opts, await loadCertPair(opts.certFile, opts.keyFile), stamp);
    if (opts.checkSeconds > 0) {
      reloader.#timer = setInterval(() => void reloader.check(), opts.checkSeconds * 1000);
    }
    return reloader;
  }

  static async #stampOf(opts: CertReloaderOptions): Promise<string> {
    return `${await fileStamp(opts.certFile)} ${await fileStamp(opts.keyFile)}`;
  }

  /** The context for new connections. */
  get context(): SecureContext {
    return this.#current.context;
  }

  /** The certificate new connections get. */
  get current(): LoadedCert {
    return this.#current;
  }

  /**
   * Reloads the pair when either file changed since the last attempt. Resolves true when a new
   * certificate is now in use. A failed attempt is not retried until the files change again, so
   * a half-written pair is picked up once its second file lands.
   */
  check(): Promise<boolean> {
    return this.#exclusive(false);
  }

  /** Reloads the pair now, changed or not. Resolves true when it loaded. */
  reload(): Promise<boolean> {
    return this.#exclusive(true);
  }

  /** Stops the check timer. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #exclusive(force: boolean): Promise<boolean> {
    const previous = this.#running ?? Promise.resolve(false);
    const next = previous.then(() => this.#attempt(force));
    this.#running = next;
    return next;
  }

  async #attempt(force: boolean): Promise<boolean> {
    const { certFile, keyFile, log } = this.#opts;
    try {
      const stamp = await CertReloader.#stampOf(this.#opts);
      if (!force && stamp === this.#stamp) return false;
      this.#stamp = stamp;
      const loaded = await loadCertPair(certFile, keyFile);
      this.#current = loaded;
      log.info("TLS certificate reloaded", {
        fingerprint256: loaded.fingerprint256,
        valid_to: loaded.validTo,
      });
      return true;
    } catch (err) {
      // spec 4.2: keep serving the old certificate; the next change of the files retries.
      log.error("TLS certificate reload failed, keeping the old one", {
        cert_file: certFile,
        error: describe(err),
      });
      return false;
    }
  }
}
