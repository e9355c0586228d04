// QoS 1 round trips per second through the broker adapter, one MQTT.js client, TCP vs WebSocket.
// The client publishes to its up topic; the message hook at once publishes a QoS 1 reply to
// its down topic; the client waits for the reply before the next publish.
//
//   deno run -A tests/bench/broker_rtt.ts [seconds per transport, default 5]
import { once } from "node:events";
import { createServer } from "node:http";
import net from "node:net";
import mqtt from "mqtt";
import { WebSocket, WebSocketServer } from "ws";
import { wsToStream } from "../../server/net/ws_stream.ts";
import { silentLogger } from "../../server/log/log.ts";
import { createBroker } from "../../server/broker/broker.ts";
import type { Broker } from "../../server/broker/types.ts";

let frames = 0;
const seconds = 1;
const WARMUP = 1000;

let broker: Broker;
broker = await createBroker({
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
    ws.on("message", () => frames++);
    broker.handle({ transport: "ws", ws, remoteAddress: "127.0.0.1", secure: false });
  });
});
tcp.listen(0, "127.0.0.1");
http.listen(0, "127.0.0.1");
await Promise.all([once(tcp, "listening"), once(http, "listening")]);
const port = (s: net.Server | typeof http) => (s.address() as net.AddressInfo).port;

async function roundTrips(url: string, coalesce = false): Promise<number> {
  const id = "bench";
  const opts = {
    clientId: id,
    username: id,
    password: "x",
    protocolVersion: 5 as const,
    reconnectPeriod: 0,
  };
  let ws: WebSocket | undefined;
  if (coalesce) {
    ws = new WebSocket(url, "mqtt");
    await once(ws, "open");
  }
  const c = coalesce
    ? new mqtt.MqttClient(() => wsToStream(ws!) as any, opts)
    : mqtt.connect(url, opts);
  await new Promise((resolve, reject) => {
    c.once("connect", resolve);
    c.once("error", reject);
  });
  await c.subscribeAsync(`nix/c/${id}/down`, { qos: 1 });
  const payload = JSON.stringify({ v: 1, t: "send", id: "m-000000", to: "peer", body: "hello" });
  let next: () => void = () => {};
  c.on("message", () => next());
  const trip = () =>
    new Promise<void>((resolve) => {
      next = resolve;
      c.publish(`nix/c/${id}/up`, payload, { qos: 1 });
    });
  for (let i = 0; i < WARMUP; i++) await trip();
  let n = 0;
  const start = performance.now();
  const stop = start + seconds * 1000;
  while (n < 1000) {
    await trip();
    n++;
  }
  const rate = n / ((performance.now() - start) / 1000);
  await c.endAsync();
  return rate;
}

const tcpRate = await roundTrips(`mqtt://127.0.0.1:${port(tcp)}`);
const wsRate = await roundTrips(`ws://127.0.0.1:${port(http)}/mqtt`);

console.log("frames", frames);
console.log(`TCP:       ${Math.round(tcpRate)} QoS 1 round trips/s`);
console.log(`WebSocket: ${Math.round(wsRate)} QoS 1 round trips/s`);
console.log(`WS/TCP:    ${(100 * wsRate / tcpRate).toFixed(1)}% (target >= 70%)`);

await broker.close();
wss.close();
tcp.close();
http.close();
