import { join } from "node:path";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Config } from "../config/types.ts";

/** Where the local server listens: the port-0 address file wins over the configured address. */
export async function localAddress(config: Config): Promise<{ host: string; port: number }> {
  let text = config.listen;
  try {
    text = (await Deno.readTextFile(join(config.data_dir, "listen.addr"))).trim();
  } catch {
    // No address file: the server was started with a fixed port, or is not running.
  }
  const idx = text.lastIndexOf(":");
  let host = text.slice(0, idx).replace(/^\[|\]$/g, "");
  if (host === "" || host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::") host = "::1";
  return { host, port: Number(text.slice(idx + 1)) };
}

/** GETs /healthz on the local port (spec 11.2); TLS when a certificate is configured. */
export async function healthcheck(
  config: Config,
  timeoutMs = 5000,
): Promise<{ ok: boolean; reason: string }> {
  const { host, port } = await localAddress(config);
  const tls = config.tls.cert_file !== "" && !config.tls.allow_plaintext;
  const request = tls ? httpsRequest : httpRequest;
  return await new Promise((resolve) => {
    const req = request({
      host,
      port,
      path: "/healthz",
      method: "GET",
      timeout: timeoutMs,
      rejectUnauthorized: false, // a local liveness probe; the cert names the public host
    }, (res) => {
      res.resume();
      res.on("end", () => {
        const ok = res.statusCode === 200;
        resolve({ ok, reason: ok ? "" : `HTTP ${res.statusCode}` });
      });
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", (err) => resolve({ ok: false, reason: err.message }));
    req.end();
  });
}
