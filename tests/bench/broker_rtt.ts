// QoS 1 round trips per second through the broker adapter, one MQTT.js client, TCP vs WebSocket.
// The client publishes to its up topic; the message hook at once publishes a QoS 1 reply to its
// down topic; the client waits for the reply before the next publish.
//
//   deno run -A tests/bench/broker_rtt.ts [seconds per run, default 5]
//
// Two WebSocket clients are measured. MQTT.js's stock Node transport (`ws` +
// createWebSocketStream, no writev) sends every piece mqtt-packet writes as its own frame and
// waits for each to flush: about 10 frames per round trip. The "coalescing" client gives
// MQTT.js the same WebSocket wrapped by our wsToStream, so each packet leaves as one frame, as
// MQTT.js's browser transport (BufferedDuplex) and most device stacks do.
import { once } from "node:events";
import { createServer } from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import { WebSocket, WebSocketServer } from "ws";
import { silentLogger } from "../../server/log/log.ts";
import { createBroker } from "../../server/broker/broker.ts";
import type { Broker } from "../../server/broker/types.ts";
import { wsToStream } from "../../server/net/ws_stream.ts";

const seconds = Number(Deno.args[0] ?? 5);
const WARMUP = 2000;
const ID = "bench";

const broker: Broker = await createBroker({
  maxClients: 10,
  log: silentLogger,
  hooks: {
    authenticate: () => Promise.resolve({ ok: true }),
    connected: () => {},
    subscribed: () => {},
    message: (connCode, payload) => {
      void broker.publish(connCode, payload, 1);
    },
    disconnected: () => {},
    abandoned: () => {},
  },
});

const tcp = net.createServer((socket) => {
  broker.handle({ transport: "tcp", stream: socket, remoteAddress: "127.0.0.1", secure: false });
});
const http = createServer();
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (p) => p.has("mqtt") ? "mqtt" : false,
});
http.on("upgrade", (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (ws) => {
    broker.handle({ transport: "ws", ws, remoteAddress: "127.0.0.1", secure: false });
  });
});
tcp.listen(0, "127.0.0.1");
http.listen(0, "127.0.0.1");
await Promise.all([once(tcp, "listening"), once(http, "listening")]);
const port = (s: net.Server | typeof http) => (s.address() as net.AddressInfo).port;
const tcpUrl = `mqtt://127.0.0.1:${port(tcp)}`;
const wsUrl = `ws://127.0.0.1:${port(http)}/mqtt`;
const options: IClientOptions = {
  clientId: ID,
  username: ID,
  password: "x",
  protocolVersion: 5,
  reconnectPeriod: 0,
};

async function coalescingClient(url: string): Promise<MqttClient> {
  const ws = new WebSocket(url, "mqtt");
  await once(ws, "open");
  const stream = wsToStream(ws);
  // deno-lint-ignore no-explicit-any
  return new mqtt.MqttClient(() => stream as Duplex as any, options);
}

async function roundTrips(c: MqttClient): Promise<number> {
  await new Promise((resolve, reject) => {
    c.once("connect", resolve);
    c.once("error", reject);
  });
  await c.subscribeAsync(`nix/c/${ID}/down`, { qos: 1 });
  const payload = JSON.stringify({ v: 1, t: "send", id: "m-000000", to: "peer", body: "hello" });
  let replied: () => void = () => {};
  c.on("message", () => replied());
  const trip = () =>
    new Promise<void>((resolve) => {
      replied = resolve;
      c.publish(`nix/c/${ID}/up`, payload, { qos: 1 });
    });
  for (let i = 0; i < WARMUP; i++) await trip();
  let n = 0;
  const start = performance.now();
  const stop = start + seconds * 1000;
  while (performance.now() < stop) {
    await trip();
    n++;
  }
  const rate = n / ((performance.now() - start) / 1000);
  await c.endAsync();
  return rate;
}

const tcpRate = await roundTrips(mqtt.connect(tcpUrl, options));
const wsRate = await roundTrips(mqtt.connect(wsUrl, options));
const wsOneFrameRate = await roundTrips(await coalescingClient(wsUrl));
const pct = (r: number) => `${(100 * r / tcpRate).toFixed(0)}% of TCP`;
console.log(`TCP:                              ${Math.round(tcpRate)} round trips/s`);
console.log(
  `WebSocket, stock MQTT.js client:  ${Math.round(wsRate)} round trips/s (${pct(wsRate)})`,
);
console.log(
  `WebSocket, one frame per packet:  ${Math.round(wsOneFrameRate)} round trips/s (${
    pct(wsOneFrameRate)
  })`,
);

await broker.close();
wss.close();
tcp.close();
http.close();
