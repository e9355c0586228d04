// A toxiproxy server for the benchmarks (issue 14 item 7): built once from its Go module into
// ~/.cache/nixmsg/bin when missing, run on 127.0.0.1 and driven over its HTTP API.
import { join } from "node:path";
import { existsSync } from "node:fs";

const VERSION = "v2.5.0";

/** Where the toxiproxy server binary lives (`TOXIPROXY_SERVER` overrides). */
export function toxiproxyPath(): string {
  const home = Deno.env.get("HOME") ?? "/root";
  return Deno.env.get("TOXIPROXY_SERVER") ?? join(home, ".cache/nixmsg/bin/server");
}

/** Builds the toxiproxy server with `go install` unless it is already there. */
export async function ensureToxiproxy(): Promise<string> {
  const path = toxiproxyPath();
  if (existsSync(path)) return path;
  const gobin = join(path, "..");
  console.error(`building toxiproxy ${VERSION} into ${gobin} (about a minute)`);
  const out = await new Deno.Command("go", {
    args: ["install", `github.com/Shopify/toxiproxy/v2/cmd/server@${VERSION}`],
    env: { GOFLAGS: "-buildvcs=false", GOBIN: gobin },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success || !existsSync(path)) throw new Error("go install of toxiproxy failed");
  return path;
}

/** A running toxiproxy server. */
export class Toxiproxy {
  readonly api: string;
  #child: Deno.ChildProcess;

  private constructor(api: string, child: Deno.ChildProcess) {
    this.api = api;
    this.#child = child;
  }

  /** Starts the server on a free loopback port and waits (at most 10 s) for its API. */
  static async start(): Promise<Toxiproxy> {
    const bin = await ensureToxiproxy();
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const child = new Deno.Command(bin, {
      args: ["-host", "127.0.0.1", "-port", String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const t = new Toxiproxy(`http://127.0.0.1:${port}`, child);
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      try {
        const r = await fetch(`${t.api}/version`);
        await r.body?.cancel();
        if (r.ok) return t;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await t.stop();
    throw new Error("toxiproxy did not answer within 10 s");
  }

  async #call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const r = await fetch(this.api + path, {
      method,
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`toxiproxy ${method} ${path}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : {};
  }

  /** Creates a proxy to `upstream` on a free loopback port; returns its "host:port". */
  async proxy(name: string, upstream: string): Promise<string> {
    const p = await this.#call("POST", "/proxies", {
      name,
      listen: "127.0.0.1:0",
      upstream,
      enabled: true,
    });
    return p.listen as string;
  }

  /** Adds a latency toxic (ms, with jitter) to both directions of proxy `name`. */
  async latency(name: string, latency: number, jitter: number): Promise<void> {
    for (const stream of ["upstream", "downstream"]) {
      await this.#call("POST", `/proxies/${name}/toxics`, {
        name: `latency_${stream}`,
        type: "latency",
        stream,
        toxicity: 1,
        attributes: { latency, jitter },
      });
    }
  }

  /** The server's process id (for /proc sampling). */
  get pid(): number {
    return this.#child.pid;
  }

  async stop(): Promise<void> {
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await this.#child.status;
  }
}
