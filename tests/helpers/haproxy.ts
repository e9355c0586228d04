// A real HAProxy (Debian's package) in TCP mode with `send-proxy-v2` in front of one server, on
// loopback (issue 30 item 5). Used by tests/proxy_protocol_haproxy_test.ts and
// tests/bench/proxy_protocol.ts.
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { fetchHttp, waitFor } from "../../server/net/_test_util.ts";

/** Where Debian installs it (tests/run.sh: `apt_install haproxy`). */
export const HAPROXY = "/usr/sbin/haproxy";
export const HAS_HAPROXY = (() => {
  try {
    return Deno.statSync(HAPROXY).isFile;
  } catch {
    return false;
  }
})();

/** A running HAProxy in front of one backend. */
export interface Haproxy {
  readonly port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Starts HAProxy on a free loopback port, relaying to `127.0.0.1:backendPort` from source
 * address 127.0.0.1 with a PROXY v2 header, its config file in `dir`. Resolves once `/healthz`
 * answers 200 through it. Several ports (the nodes of a cluster, issue 30) are balanced round
 * robin, so consecutive connections land on consecutive nodes.
 */
export async function startHaproxy(
  dir: string,
  backendPort: number | readonly number[],
): Promise<Haproxy> {
  const ports = typeof backendPort === "number" ? [backendPort] : backendPort;
  const port = await freePort();
  const cfg = join(dir, "haproxy.cfg");
  await Deno.writeTextFile(
    cfg,
    [
      "global",
      "  maxconn 256",
      "defaults",
      "  mode tcp",
      "  timeout connect 5s",
      "  timeout client 60s",
      "  timeout server 60s",
      "frontend nixmsg",
      `  bind 127.0.0.1:${port}`,
      "  default_backend nodes",
      "backend nodes",
      "  balance roundrobin",
      ...ports.map((p, i) => `  server node${i + 1} 127.0.0.1:${p} send-proxy-v2 source 127.0.0.1`),
      "",
    ].join("\n"),
  );
  const child = new Deno.Command(HAPROXY, {
    args: ["-db", "-f", cfg],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const drain = (async () => {
    const dec = new TextDecoderStream();
    const merged = child.stderr.pipeThrough(dec);
    void child.stdout.cancel();
    for await (const chunk of merged) output += chunk;
  })();
  let exited = false;
  void child.status.then(() => (exited = true));
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`haproxy exited: ${output}`);
        const r = await fetchHttp(port, "/healthz").catch(() => null);
        return r?.status === 200;
      },
      "/healthz through haproxy",
      20_000,
    );
  } catch (err) {
    if (!exited) child.kill("SIGKILL");
    await child.status;
    throw err;
  }
  return {
    port,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await drain;
    },
  };
}
