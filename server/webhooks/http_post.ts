/**
 * One webhook request (issue 34): a POST with a connect timeout and a deadline for the whole
 * answer, through a DNS lookup that checks every address against the SSRF rule before the socket
 * connects (so DNS cannot move the host to a private address after the check). Redirects are not
 * followed (a 3xx is a failed attempt); the answer's body is read up to a small bound and dropped.
 */
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import {
  type AllowList,
  checkAddresses,
  hostOf,
  resolveChecked,
  WebhookAddressError,
} from "./address_policy.ts";

/** Options of {@link postWebhook}. */
export interface PostOptions {
  allow: AllowList;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  maxResponseBytes: number;
}

/** What came of one attempt. `status` 0 when there was no HTTP answer. */
export interface PostResult {
  ok: boolean;
  status: number;
  /**
   * Short cause for logs and the console: `http_<status>`, `timeout`, `connect_timeout`,
   * `refused`, `reset`, `dns`, `tls`, `address_refused` or `error`; empty on success.
   */
  error: string;
  ms: number;
}

function checkedLookup(allow: AllowList): LookupFunction {
  return ((host: string, options: { all?: boolean }, cb: (...a: unknown[]) => void) => {
    resolveChecked(host.toLowerCase(), allow).then((addresses) => {
      const rows = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
      if (options?.all) cb(null, rows);
      else cb(null, rows[0].address, rows[0].family);
    }, (err) => cb(err));
  }) as unknown as LookupFunction;
}

function causeOf(err: unknown): string {
  if (err instanceof WebhookAddressError) return "address_refused";
  const code = (err as { code?: string })?.code ?? "";
  if (code === "ECONNREFUSED") return "refused";
  if (code === "ECONNRESET") return "reset";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "dns";
  if ((err as Error)?.message === "connect_timeout") return "connect_timeout";
  if ((err as Error)?.message === "timeout") return "timeout";
  if (/^(ERR_TLS|ERR_SSL|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|ERR_CERT)/.test(code)) {
    return "tls";
  }
  return "error";
}

/**
 * POSTs `body` to `url` with `headers`. Never throws; a 2xx whose answer arrived in time is `ok`.
 *
 * @example
 * ```ts
 * const r = await postWebhook(new URL("https://hooks.example/in"), "{}", {}, opts);
 * if (!r.ok) console.log(r.error);
 * ```
 */
export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  opts: PostOptions,
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const finish = (r: Omit<PostResult, "ms">) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      resolve({ ...r, ms: elapsed() });
    };
    const fail = (err: unknown, status = 0) => finish({ ok: false, status, error: causeOf(err) });
    const mod = url.protocol === "https:" ? https : http;
    const payload = new TextEncoder().encode(body);
    let req: http.ClientRequest;
    try {
      // An IP literal never goes through `lookup`: check it here.
      if (isIP(hostOf(url)) !== 0) checkAddresses(hostOf(url), [hostOf(url)], opts.allow);
      req = mod.request({
        protocol: url.protocol,
        hostname: hostOf(url),
        port: url.port === "" ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: "POST",
        agent: false,
        lookup: checkedLookup(opts.allow),
        // SNI carries names only (RFC 6066); the certificate is checked against the host either way.
        ...(isIP(hostOf(url)) === 0 ? { servername: hostOf(url) } : {}),
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(payload.length),
          "user-agent": "nixmsg-webhook/1",
        },
      });
    } catch (err) {
      fail(err);
      return;
    }
    const abort = (cause: string) => {
      fail(new Error(cause));
      req.destroy();
    };
    timers.push(setTimeout(() => abort("timeout"), opts.responseTimeoutMs));
    const connectTimer = setTimeout(() => abort("connect_timeout"), opts.connectTimeoutMs);
    timers.push(connectTimer);
    req.on("socket", (socket) => {
      const connected = () => clearTimeout(connectTimer);
      socket.once(url.protocol === "https:" ? "secureConnect" : "connect", connected);
    });
    req.on("error", (err) => fail(err));
    req.on("response", (res) => {
      clearTimeout(connectTimer);
      const status = res.statusCode ?? 0;
      let read = 0;
      const done = () => {
        const ok = status >= 200 && status < 300;
        finish({ ok, status, error: ok ? "" : `http_${status}` });
      };
      res.on("data", (chunk: Uint8Array) => {
        read += chunk.length;
        if (read >= opts.maxResponseBytes) {
          done();
          res.destroy();
        }
      });
      res.on("end", done);
      res.on("error", (err) => fail(err, status));
      res.on("close", () => {
        if (!res.complete) fail(Object.assign(new Error("reset"), { code: "ECONNRESET" }), status);
      });
    });
    req.end(payload);
  });
}
