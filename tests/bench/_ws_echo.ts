import { once } from "node:events";
import { createServer } from "node:http";
import net from "node:net";
import { WebSocket, WebSocketServer } from "ws";
const http = createServer();
const wss = new WebSocketServer({ server: http });
wss.on("connection", (ws) => ws.on("message", (d) => ws.send(d)));
http.listen(0, "127.0.0.1"); await once(http, "listening");
const tcp = net.createServer((s) => s.on("data", (d) => s.write(d)));
tcp.listen(0, "127.0.0.1"); await once(tcp, "listening");
const N = 20000;
{
  const c = new WebSocket(`ws://127.0.0.1:${(http.address() as any).port}`);
  await once(c, "open");
  let next = () => {}; c.on("message", () => next());
  const buf = Buffer.alloc(100);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await new Promise<void>((r) => { next = r; c.send(buf); });
  console.log("ws echo/s", Math.round(N / ((performance.now() - t0) / 1000)));
  c.close();
}
{
  const c = net.connect((tcp.address() as any).port, "127.0.0.1"); c.setNoDelay(true);
  await once(c, "connect");
  let next = () => {}; c.on("data", () => next());
  const buf = Buffer.alloc(100);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await new Promise<void>((r) => { next = r; c.write(buf); });
  console.log("tcp echo/s", Math.round(N / ((performance.now() - t0) / 1000)));
  c.destroy();
}
wss.close(); http.close(); tcp.close();
