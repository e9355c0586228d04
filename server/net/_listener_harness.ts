/** Starts real listeners on port 0 with a small route table, for the listener tests. */
import { createRouter, type Route } from "../http/router.ts";
import { healthRoutes } from "../http/health.ts";
import type { Config } from "../config/types.ts";
import { type Listeners, startListeners } from "./listener.ts";
import { memoryLog, testConfig, type TestConfigOverrides, within } from "./_test_util.ts";
import type { MqttConn } from "./types.ts";

/** What a listener test gets. */
export interface ListenerHarness {
  readonly listeners: Listeners;
  readonly config: Config;
  readonly dataDir: string;
  /** Every connection handed to onMqtt, in order. */
  readonly conns: MqttConn[];
  /** Resolves with the next connection handed to onMqtt that no earlier call returned. */
  nextConn(): Promise<MqttConn>;
  readonly lines: Array<Record<string, unknown>>;
  /** Flips the answer of /readyz. */
  setReady(ready: boolean): void;
}

const echoPeer = (name: string): Route["handler"] => (ctx) =>
  ctx.json(200, { route: name, peer: ctx.peer });

/** Routes of every scope: health checks and one echo route per scope. */
function routes(isReady: () => boolean): Route[] {
  return [
    ...healthRoutes({ ready: isReady }),
    { method: "GET", path: "/api/client/x", scope: "client", handler: echoPeer("client") },
    { method: "GET", path: "/api/admin/x", scope: "admin", handler: echoPeer("admin") },
    {
      method: "POST",
      path: "/api/client/body",
      scope: "client",
      handler: async (ctx) => ctx.json(200, { bytes: (await ctx.body(1 << 20)).byteLength }),
    },
  ];
}

/** Runs `body` against listeners started from `overrides` (data_dir is a fresh temp dir). */
export async function withListeners(
  overrides: Omit<TestConfigOverrides, "data_dir">,
  body: (h: ListenerHarness) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir();
  const { log, lines } = memoryLog();
  const conns: MqttConn[] = [];
  const waiting: Array<(c: MqttConn) => void> = [];
  let taken = 0;
  let ready = true;
  const config = testConfig({ ...overrides, data_dir: dataDir });
  let listeners: Listeners | undefined;
  try {
    listeners = await startListeners({
      config,
      log,
      http: createRouter(routes(() => ready), { log }),
      onMqtt: (conn) => {
        conns.push(conn);
        const waiter = waiting.shift();
        if (waiter !== undefined) {
          taken++;
          waiter(conn);
        }
      },
    });
    await body({
      listeners,
      config,
      dataDir,
      conns,
      nextConn: () => {
        if (taken < conns.length) return Promise.resolve(conns[taken++]);
        return within(new Promise((resolve) => waiting.push(resolve)), "a connection to onMqtt");
      },
      lines,
      setReady: (r) => {
        ready = r;
      },
    });
  } finally {
    await listeners?.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
