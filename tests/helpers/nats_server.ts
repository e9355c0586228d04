// A real nats-server (v2.15.3, built by scripts/install_nats_server.sh into the tools cache) on a
// loopback port, for the cluster tests (issue 30). It can be stopped and started again on the same
// port, as a NATS outage.
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";

const VERSION = "v2.15.3";

/** The binary: NIXMSG_NATS_SERVER, or the one scripts/install_nats_server.sh builds. */
export const NATS_SERVER_BIN = Deno.env.get("NIXMSG_NATS_SERVER") ??
  join(
    Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache"),
    "nixmsg",
    `nats-server-${VERSION}`,
    "nats-server",
  );

/** True when the binary exists (tests skip otherwise, naming the script that builds it). */
export const HAS_NATS_SERVER = (() => {
  try {
    return Deno.statSync(NATS_SERVER_BIN).isFile;
  } catch {
    return false;
  }
})();

/** Why the cluster tests are skipped, or null. */
export const NATS_SKIP_REASON = HAS_NATS_SERVER
  ? null
  : `${NATS_SERVER_BIN} missing (bash scripts/install_nats_server.sh): cluster tests skipped`;

/** A running nats-server. */
export interface NatsServer {
  readonly port: number;
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  /** Stops it (SIGTERM) and waits; `start` brings it back on the same port. */
  stop(): Promise<void>;
  /** Starts it again after `stop`; resolves once it accepts clients. */
  start(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Starts nats-server on a free loopback port with `token` required when given. */
export async function startNatsServer(opts: { token?: string } = {}): Promise<NatsServer> {
  const port = await freePort();
  let child: Deno.ChildProcess | null = null;
  const launch = async () => {
    const args = ["-a", "127.0.0.1", "-p", String(port)];
    if (opts.token) args.push("--auth", opts.token);
    const c = new Deno.Command(NATS_SERVER_BIN, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    child = c;
    let out = "";
    let onReady: (ok: boolean) => void = () => {};
    const ready = new Promise<boolean>((r) => (onReady = r));
    // Read stderr to the end (a closed pipe would end the server at its next log line).
    void (async () => {
      let seen = false;
      for await (const chunk of c.stderr.pipeThrough(new TextDecoderStream())) {
        if (seen) continue;
        out += chunk;
        if (out.includes("Server is ready")) {
          seen = true;
          onReady(true);
        }
      }
      onReady(false);
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ok = await Promise.race([
      ready,
      new Promise<false>((r) => (timer = setTimeout(() => r(false), 15_000))),
    ]);
    clearTimeout(timer);
    if (!ok) {
      c.kill("SIGKILL");
      await c.status;
      throw new Error(`nats-server did not start:\n${out}`);
    }
  };
  await launch();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      const c = child;
      if (c === null) return;
      child = null;
      c.kill("SIGTERM");
      await c.status;
    },
    start: launch,
  };
}
