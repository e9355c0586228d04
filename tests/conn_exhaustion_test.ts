// issue 18 item 1: a `nixmsg serve` child under a small descriptor limit (prlimit) is flooded
// with silent TCP connections from one loopback address. The per-IP cap keeps another address
// served throughout; and when the descriptors do run out, accepting resumes once they return.
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { online } from "./helpers/client.ts";
import { PW } from "./helpers/messaging.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { connectTcp, fetchHttp, waitFor, within } from "../server/net/_test_util.ts";

const HAS_PRLIMIT = (() => {
  try {
    return new Deno.Command("prlimit", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

const NOFILE = 256;
const FLOODER = "127.0.0.2";
const BYSTANDER = "127.0.0.3";
const TOKEN = "metrics-token";

/** A flood of silent connections from one address; `open` are those the server kept. */
interface Flood {
  readonly sockets: Socket[];
  open(): number;
  free(): void;
}

async function flood(port: number, from: string, n: number): Promise<Flood> {
  const sockets: Socket[] = [];
  let closed = 0;
  for (let i = 0; i < n; i++) {
    const s = await connectTcp(port, "127.0.0.1", from).catch(() => null);
    if (s === null) continue;
    s.on("error", () => {});
    s.once("close", () => closed++);
    sockets.push(s);
  }
  return {
    sockets,
    open: () => sockets.length - closed,
    free: () => {
      for (const s of sockets) s.destroy();
    },
  };
}

/** Logs in over WebSocket from `from` and closes again; throws when the login fails. */
async function login(port: number, from: string): Promise<void> {
  const { client } = await online(`ws://127.0.0.1:${port}/mqtt`, "a", PW, {
    wsOptions: { localAddress: from },
    connectTimeout: 3000,
    reconnectPeriod: 0,
  });
  await client.close();
}

/** `path` answers 200 within a second (a listener that does not accept leaves it hanging). */
function answers(port: number, path: string, from?: string): Promise<boolean> {
  const r = fetchHttp(port, path, {
    localAddress: from,
    headers: { Authorization: `Bearer ${TOKEN}` },
  });
  return within(r, path, 1000).then((r) => r.status === 200, () => false);
}

/** Tries `/healthz` from `from` until it answers 200; fails after `ms`. */
async function healthyWithin(port: number, from: string, ms: number): Promise<void> {
  await waitFor(
    () => answers(port, "/healthz", from),
    `/healthz from ${from}`,
    ms,
  );
}

function logged(server: ServerProcess, msg: string): Record<string, unknown> | undefined {
  return server.logs.find((l) => l.msg === msg);
}

async function withLimitedServer(
  overrides: Record<string, unknown>,
  fn: (server: ServerProcess) => Promise<void>,
): Promise<void> {
  const home = await prepareHome({ metrics: { token: TOKEN }, ...overrides }, ["a"], PW);
  const server = await startServerProcess(home, 30_000, {
    wrap: ["prlimit", `--nofile=${NOFILE}:${NOFILE}`],
  });
  try {
    await fn(server);
  } finally {
    assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
}

Deno.test({
  name: "a flood from one address leaves other addresses served under a small descriptor limit",
  ignore: !HAS_PRLIMIT,
  fn: () =>
    withLimitedServer({}, async (server) => {
      const caps = logged(server, "Connection caps")!;
      assert.equal(caps.open_files_limit, NOFILE);
      const perIp = Number(caps.max_connections_per_ip);
      assert.ok(perIp > 0 && perIp < Number(caps.max_connections), JSON.stringify(caps));

      const f = await flood(server.port, FLOODER, 300);
      // Everything past the per-IP cap is closed at once.
      await waitFor(() => f.open() <= perIp, "the flood to be cut to the per-IP cap", 10_000);
      // The flood goes on; another address is served meanwhile: health checks and a login.
      assert.equal(
        (await fetchHttp(server.port, "/readyz", { localAddress: BYSTANDER })).status,
        200,
      );
      await login(server.port, BYSTANDER);
      const refused = logged(server, "Connection refused: too many connections from one address");
      assert.equal(refused?.remote, FLOODER);
      const metrics = await fetchHttp(server.port, "/metrics", {
        localAddress: BYSTANDER,
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      assert.match(metrics.text, /nixmsg_connections_closed_total\{reason="ip_cap"\} [1-9]/);

      f.free();
      await healthyWithin(server.port, FLOODER, 5000);
      await login(server.port, FLOODER);
    }),
});

Deno.test({
  name: "accepting resumes within seconds after the descriptors ran out and came back",
  ignore: !HAS_PRLIMIT,
  fn: () =>
    // Caps far above the descriptor limit, so the flood really exhausts the descriptors.
    withLimitedServer(
      { limits: { max_connections: 100000, max_connections_per_ip: 100000 } },
      async (server) => {
        assert.ok(server.logs.some((l) => /leaves less than/.test(String(l.msg))));
        const f = await flood(server.port, FLOODER, NOFILE + 100);
        await waitFor(
          () =>
            logged(server, "Accepting connections impaired; reopening the listener") !== undefined,
          "the outage to be logged",
          15_000,
        );

        f.free();
        await healthyWithin(server.port, BYSTANDER, 10_000);
        await healthyWithin(server.port, FLOODER, 5000);
        await login(server.port, BYSTANDER);
        await waitFor(
          () => logged(server, "Accepting connections again") !== undefined,
          "the end of the outage to be logged",
          5000,
        );
        await waitFor(() => answers(server.port, "/readyz"), "/readyz", 5000);
        const metrics = await fetchHttp(server.port, "/metrics", {
          headers: { Authorization: `Bearer ${TOKEN}` },
        });
        assert.match(metrics.text, /nixmsg_accept_outages_total\{listener="listen"\} [1-9]/);
        assert.match(metrics.text, /nixmsg_accept_impaired\{listener="listen"\} 0/);
      },
    ),
});
