/**
 * The harness's weak-network side: a toxiproxy server (github.com/Shopify/toxiproxy, v2.5.0) on
 * 127.0.0.1, started on the first `toxiproxy_start` command, with one proxy per command in front
 * of the NixMsg server, driven over toxiproxy's HTTP API. `scripts/install_toxiproxy.sh` builds
 * the binary into a cache directory when it is missing.
 */
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;
const INSTALL = join(ROOT, "scripts/install_toxiproxy.sh");
const START_TIMEOUT_MS = 15_000;

/** Which way a toxic acts: `upstream` is client → server, `downstream` server → client. */
export type Stream = "upstream" | "downstream";

/** The toxiproxy commands the harness reads on stdin (see README.md). */
export type ToxiCommand =
  | { cmd: "toxiproxy_start"; name?: string }
  | {
    cmd: "toxic_add";
    proxy: string;
    type: string;
    name?: string;
    stream?: Stream;
    toxicity?: number;
    attributes?: Record<string, number>;
  }
  | {
    cmd: "toxic_update";
    proxy: string;
    name: string;
    toxicity?: number;
    attributes?: Record<string, number>;
  }
  | { cmd: "toxic_remove"; proxy: string; name?: string }
  | { cmd: "toxiproxy_cut"; proxy: string };

const COMMANDS = new Set(["toxiproxy_start", "toxic_add", "toxic_update", "toxic_remove"]);
COMMANDS.add("toxiproxy_cut");

/** True when `c` is one of the {@link ToxiCommand}s. */
export function isToxiCommand(c: { cmd?: unknown }): c is ToxiCommand {
  return typeof c.cmd === "string" && COMMANDS.has(c.cmd);
}

/** A proxy created by `toxiproxy_start`, as the command returns it. */
export interface ProxyInfo {
  name: string;
  /** toxiproxy's HTTP API, e.g. `http://127.0.0.1:40001`, for runners that drive it directly. */
  api_url: string;
  /** "127.0.0.1:port" the proxy listens on. */
  address: string;
  ws_url: string;
  tcp_url: string;
}

/** Runs the toxiproxy server for one harness and answers the {@link ToxiCommand}s. */
export class ToxiproxyRunner {
  readonly #upstream: string;
  readonly #logFile: string;
  #server: { child: Deno.ChildProcess; api: string } | null = null;
  #starting: Promise<{ child: Deno.ChildProcess; api: string }> | null = null;
  #proxies = 0;
  #toxics = 0;

  /** `upstream` is the NixMsg server's "host:port"; toxiproxy logs to `logFile`. */
  constructor(upstream: string, logFile: string) {
    this.#upstream = upstream;
    this.#logFile = logFile;
  }

  command(c: ToxiCommand): Promise<unknown> {
    switch (c.cmd) {
      case "toxiproxy_start":
        return this.createProxy(c.name);
      case "toxic_add":
        return this.#api("POST", `/proxies/${this.#name(c.proxy)}/toxics`, {
          name: c.name ?? `${c.type}_${c.stream ?? "downstream"}_${++this.#toxics}`,
          type: c.type,
          stream: c.stream ?? "downstream",
          toxicity: c.toxicity ?? 1,
          attributes: c.attributes ?? {},
        });
      case "toxic_update":
        return this.#api(
          "POST",
          `/proxies/${this.#name(c.proxy)}/toxics/${this.#name(c.name)}`,
          {
            ...(c.toxicity === undefined ? {} : { toxicity: c.toxicity }),
            attributes: c.attributes ?? {},
          },
        );
      case "toxic_remove":
        return this.#remove(c.proxy, c.name);
      case "toxiproxy_cut":
        return this.#cut(c.proxy);
    }
  }

  /** Starts the server if needed and adds a proxy in front of the NixMsg server. */
  async createProxy(name?: string): Promise<ProxyInfo> {
    const { api } = await this.#start();
    const proxyName = this.#name(name ?? `p${++this.#proxies}`);
    const created = await this.#api("POST", "/proxies", {
      name: proxyName,
      listen: "127.0.0.1:0",
      upstream: this.#upstream,
      enabled: true,
    }) as { listen: string };
    return {
      name: proxyName,
      api_url: api,
      address: created.listen,
      ws_url: `ws://${created.listen}/mqtt`,
      tcp_url: `mqtt://${created.listen}`,
    };
  }

  /** Stops the toxiproxy server (every proxied connection closes). */
  async stop(): Promise<void> {
    const server = this.#server ?? await this.#starting?.catch(() => null);
    if (!server) return;
    try {
      server.child.kill("SIGTERM");
    } catch { /* already gone */ }
    await server.child.status;
  }

  async #remove(proxy: string, name?: string): Promise<{ removed: string[] }> {
    const p = this.#name(proxy);
    const names = name === undefined
      ? (await this.#api("GET", `/proxies/${p}/toxics`) as { name: string }[]).map((t) => t.name)
      : [this.#name(name)];
    for (const n of names) await this.#api("DELETE", `/proxies/${p}/toxics/${n}`);
    return { removed: names };
  }

  /** Disables and re-enables the proxy: toxiproxy closes every open connection. */
  async #cut(proxy: string): Promise<Record<string, never>> {
    const p = this.#name(proxy);
    await this.#api("POST", `/proxies/${p}`, { enabled: false });
    await this.#api("POST", `/proxies/${p}`, { enabled: true });
    return {};
  }

  #name(s: string): string {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(s)) throw new Error(`Bad proxy or toxic name: ${s}`);
    return s;
  }

  async #api(method: string, path: string, body?: unknown): Promise<unknown> {
    if (!this.#server) throw new Error("toxiproxy is not running: send toxiproxy_start first");
    const res = await fetch(`${this.#server.api}${path}`, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`toxiproxy ${method} ${path}: HTTP ${res.status} ${text.trim()}`);
    return text === "" ? {} : JSON.parse(text);
  }

  #start(): Promise<{ child: Deno.ChildProcess; api: string }> {
    this.#starting ??= this.#launch().then((s) => (this.#server = s));
    return this.#starting;
  }

  async #launch(): Promise<{ child: Deno.ChildProcess; api: string }> {
    const bin = await binary();
    // toxiproxy's API cannot listen on port 0: take a free port from the kernel, then hand it
    // over. Another process may grab it in between, so try a few times.
    let lastError = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (l.addr as Deno.NetAddr).port;
      l.close();
      const log = await Deno.open(this.#logFile, { write: true, create: true, append: true });
      const child = new Deno.Command(bin, {
        args: ["-host", "127.0.0.1", "-port", String(port)],
        stdin: "null",
        stdout: "null",
        stderr: "piped", // its log
      }).spawn();
      const drained = child.stderr.pipeTo(log.writable);
      const api = `http://127.0.0.1:${port}`;
      const outcome = await Promise.race([
        ready(api),
        child.status.then((s) => `toxiproxy exited with ${s.code}`),
      ]);
      if (outcome === true) return { child, api };
      lastError = outcome === false ? "toxiproxy did not answer in time" : outcome;
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
      await drained.catch(() => {});
    }
    throw new Error(`Could not start toxiproxy: ${lastError} (log: ${this.#logFile})`);
  }
}

/** The toxiproxy binary: built by scripts/install_toxiproxy.sh when missing. */
async function binary(): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: [INSTALL],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const path = new TextDecoder().decode(out.stdout).trim();
  if (out.code !== 0 || path === "") {
    throw new Error(`install_toxiproxy.sh failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return path;
}

/** Resolves true once GET /version answers, false after {@link START_TIMEOUT_MS}. */
async function ready(api: string): Promise<boolean> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (let i = 0; i < 300 && Date.now() < deadline; i++) {
    try {
      const res = await fetch(`${api}/version`);
      await res.body?.cancel();
      if (res.ok) return true;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
