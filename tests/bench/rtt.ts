// Request/response round trips per second through the real server (spec 6.6 `self.get` -> `resp`),
// for 1 and for 100 clients, over TCP and WebSocket, beside bare aedes relaying QoS 1 on the same
// machine in the same run.
//
//   deno run -A tests/bench/rtt.ts [seconds per measurement, default 3]
//
// - The server runs in this process (tests/helpers/test_server.ts), the clients in a Worker, so
//   the server's event loop is not shared with 100 MQTT.js clients. Each client waits for its
//   answer before sending the next request (closed loop).
// - "bare aedes" is a plain aedes 2.0 broker on its own port: a client subscribes to a topic and
//   publishes QoS 1 to it; a round trip ends when its own message comes back. The same socket
//   handling is used (our read patch and WebSocket stream), so the difference is the NixMsg
//   request path (hooks, serial queue, parse, rate limit, SQLite read, serialize, size check).
// - TCP clients set TCP_NODELAY as devices and the Go SDK do; MQTT.js leaves Nagle on, which
//   costs ~40 ms per round trip (delayed ACK).
// - Two WebSocket clients: MQTT.js's stock Node transport sends every piece mqtt-packet writes as
//   its own frame; "ws, 1 frame/packet" gives MQTT.js a WebSocket wrapped by our wsToStream, so
//   each packet is one frame, as MQTT.js's browser transport and most device stacks do.
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";
import { Aedes } from "aedes";
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import { WebSocket, WebSocketServer } from "ws";
import { wsToStream } from "../../server/net/ws_stream.ts";
import { patchRead } from "../../server/broker/read_patch.ts";

type System = "nixmsg" | "aedes";
type Transport = "tcp" | "ws" | "ws1";

interface RunRequest {
  system: System;
  transport: Transport;
  url: string;
  ids: string[];
  password: string;
  seconds: number;
}

interface RunResult {
  trips: number;
  seconds: number;
  p50: number;
  p99: number;
}

const WARMUP_MS = 500;
const PASSWORD = "bench-password-1";

if (new URL(import.meta.url).search === "?worker") workerMain();
else await main();

// ---------------------------------------------------------------------------------------------
// Clients (Worker)

type FromWorker = RunResult | { error: string } | { mark: "start" | "stop" };

function workerMain(): void {
  const scope = globalThis as unknown as {
    onmessage: ((e: MessageEvent<RunRequest>) => void) | null;
    postMessage(m: FromWorker): void;
  };
  scope.onmessage = (e) => {
    run(e.data, (mark) => scope.postMessage({ mark })).then(
      (r) => scope.postMessage(r),
      (err) => scope.postMessage({ error: String(err?.stack ?? err) }),
    );
  };
}

async function openClient(req: RunRequest, id: string): Promise<MqttClient> {
  const options: IClientOptions = {
    clientId: id,
    username: id,
    password: req.password,
    protocolVersion: 5,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: 30_000,
    properties: { sessionExpiryInterval: 0 },
  };
  let c: MqttClient;
  if (req.transport === "ws1") {
    const ws = new WebSocket(req.url, "mqtt");
    await once(ws, "open");
    const stream = wsToStream(ws) as Duplex;
    c = new mqtt.MqttClient(() => stream as never, options);
  } else {
    c = mqtt.connect(req.url, options);
    (c.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
  }
  await new Promise((resolve, reject) => {
    c.once("connect", resolve);
    c.once("error", reject);
    c.once("close", () => reject(new Error(`${id}: closed before CONNACK`)));
  });
  return c;
}

/** One closed-loop client: `trip()` sends a request and resolves on its answer. */
async function prepare(
  req: RunRequest,
  id: string,
): Promise<{ c: MqttClient; trip(): Promise<void> }> {
  const c = await openClient(req, id);
  const down = req.system === "nixmsg" ? `nix/c/${id}/down` : `bench/${id}`;
  const up = req.system === "nixmsg" ? `nix/c/${id}/up` : down;
  await c.subscribeAsync(down, { qos: 1 });
  let answered: () => void = () => {};
  c.on("message", () => answered());
  let rid = 0;
  const trip = (type = "self.get") =>
    new Promise<void>((resolve) => {
      answered = resolve;
      const frame = req.system === "nixmsg"
        ? `{"v":1,"type":"${type}","rid":"${++rid}"}`
        : `{"v":1,"type":"relay","rid":"${++rid}"}`;
      c.publish(up, frame, { qos: 1 });
    });
  if (req.system === "nixmsg") await trip("hello");
  return { c, trip: () => trip() };
}

async function run(req: RunRequest, mark: (m: "start" | "stop") => void): Promise<RunResult> {
  const clients = await Promise.all(req.ids.map((id) => prepare(req, id)));
  const latencies: number[] = [];
  let trips = 0;
  let measuring = false;
  const start = performance.now();
  const measureFrom = start + WARMUP_MS;
  const stop = measureFrom + req.seconds * 1000;
  let measuredFrom = 0;
  await Promise.all(clients.map(async ({ trip }) => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= stop) return;
      if (!measuring && t0 >= measureFrom) {
        measuring = true;
        measuredFrom = t0;
        mark("start");
      }
      await trip();
      if (t0 >= measureFrom) {
        trips++;
        latencies.push(performance.now() - t0);
      }
    }
  }));
  const elapsed = (performance.now() - measuredFrom) / 1000;
  mark("stop");
  await Promise.all(clients.map(({ c }) => c.endAsync()));
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { trips, seconds: elapsed, p50: at(0.5), p99: at(0.99) };
}

// ---------------------------------------------------------------------------------------------
// Servers and the table (main thread)

async function startBareAedes(): Promise<
  { tcpUrl: string; wsUrl: string; close(): Promise<void> }
> {
  // deno-lint-ignore no-explicit-any
  const aedes = await (Aedes as any).createBroker();
  const tcp = net.createServer((socket) => {
    socket.setNoDelay(true);
    patchRead(socket);
    aedes.handle(socket);
  });
  const http = createHttpServer();
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (p) => (p.has("mqtt") ? "mqtt" : false),
  });
  http.on("upgrade", (req, socket, head) => {
    (socket as net.Socket).setNoDelay(true);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const stream = wsToStream(ws);
      patchRead(stream);
      aedes.handle(stream);
    });
  });
  tcp.listen(0, "127.0.0.1");
  http.listen(0, "127.0.0.1");
  await Promise.all([once(tcp, "listening"), once(http, "listening")]);
  const port = (s: net.Server) => (s.address() as net.AddressInfo).port;
  return {
    tcpUrl: `mqtt://127.0.0.1:${port(tcp)}`,
    wsUrl: `ws://127.0.0.1:${port(http)}/mqtt`,
    async close() {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      wss.close();
      await Promise.all([
        new Promise((r) => tcp.close(r)),
        new Promise((r) => http.close(r)),
      ]);
    },
  };
}

/** CPU time (user + system) of this process's main thread, in ms (Linux /proc). */
function mainThreadCpuMs(): number {
  const stat = Deno.readTextFileSync(`/proc/self/task/${Deno.pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat, in ticks of 1/100 s on Linux.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function main(): Promise<void> {
  const { startTestServer } = await import("../helpers/test_server.ts");
  const seconds = Number(Deno.args[0] ?? 3);
  const t = await startTestServer({
    limits: { requests_per_second: 1_000_000, max_clients: 2000 },
  });
  const bare = await startBareAedes();
  const ids = Array.from({ length: 100 }, (_, i) => `bench${i}`);
  for (const id of ids) await t.createEndpoint(id, PASSWORD);
  const worker = new Worker(new URL("./rtt.ts?worker", import.meta.url), { type: "module" });
  // The server's CPU time per round trip: its event loop is this process's main thread, so
  // read that thread's utime + stime between the worker's start and stop marks. Less sensitive
  // to other load on the machine than the rates are.
  const ask = (req: RunRequest) =>
    new Promise<{ r: RunResult; cpuMs: number }>((resolve, reject) => {
      let cpu0 = 0;
      let cpuMs = 0;
      worker.onmessage = (e: MessageEvent<FromWorker>) => {
        const m = e.data;
        if ("mark" in m) {
          if (m.mark === "start") cpu0 = mainThreadCpuMs();
          else cpuMs = mainThreadCpuMs() - cpu0;
        } else if ("error" in m) reject(new Error(m.error));
        else resolve({ r: m, cpuMs });
      };
      worker.postMessage(req);
    });

  type Row = { system: System; transport: Transport; n: number; r: RunResult; cpuMs: number };
  const rows: Row[] = [];
  try {
    for (const system of ["nixmsg", "aedes"] as const) {
      for (const n of [1, 100]) {
        for (const transport of ["tcp", "ws", "ws1"] as const) {
          const url = system === "nixmsg"
            ? (transport === "tcp" ? t.tcpUrl : t.wsUrl)
            : (transport === "tcp" ? bare.tcpUrl : bare.wsUrl);
          const ran = await ask({
            system,
            transport,
            url,
            ids: ids.slice(0, n),
            password: PASSWORD,
            seconds,
          });
          rows.push({ system, transport, n, ...ran });
          const perSec = Math.round(ran.r.trips / ran.r.seconds);
          console.error(`  ${system} ${transport} x${n}: ${perSec}/s`);
        }
      }
    }
  } finally {
    worker.terminate();
    await bare.close();
    await t.close();
  }

  const rate = (s: System, tr: Transport, n: number) => {
    const row = rows.find((x) => x.system === s && x.transport === tr && x.n === n)!;
    return row.r.trips / row.r.seconds;
  };
  const label: Record<Transport, string> = {
    tcp: "TCP",
    ws: "WebSocket, stock MQTT.js",
    ws1: "WebSocket, 1 frame/packet",
  };
  console.log(
    `\nRound trips per second, ${seconds} s per measurement after ${WARMUP_MS} ms warm-up\n`,
  );
  console.log(
    "| system | transport | clients | round trips/s | % of TCP | p50 ms | p99 ms | server CPU µs/trip |",
  );
  console.log("|---|---|--:|--:|--:|--:|--:|--:|");
  for (const { system, transport, n, r, cpuMs } of rows) {
    const perSec = r.trips / r.seconds;
    const pct = (100 * perSec / rate(system, "tcp", n)).toFixed(0);
    const what = system === "nixmsg" ? "NixMsg self.get" : "bare aedes QoS 1";
    const cpu = (1000 * cpuMs / r.trips).toFixed(0);
    console.log(
      `| ${what} | ${label[transport]} | ${n} | ${Math.round(perSec)} | ${pct}% | ` +
        `${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${cpu} |`,
    );
  }
  for (const n of [1, 100]) {
    const tcp = rate("nixmsg", "tcp", n);
    const ws = (100 * rate("nixmsg", "ws", n) / tcp).toFixed(0);
    const ws1 = (100 * rate("nixmsg", "ws1", n) / tcp).toFixed(0);
    const vsAedes = (100 * tcp / rate("aedes", "tcp", n)).toFixed(0);
    console.log(
      `\nNixMsg, ${n} client(s): WS/TCP = ${ws}% (stock MQTT.js), ${ws1}% (1 frame/packet); ` +
        `NixMsg/bare aedes over TCP = ${vsAedes}%`,
    );
  }
}
