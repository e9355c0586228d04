// The bare baseline of the benchmarks: aedes 2 with no authentication hooks, no durability and no
// application protocol, serving MQTT over WebSocket (`/mqtt`) and TCP on one loopback port. It
// prints `port <ws> <tcp>` once listening and runs until killed. Started by `_aedes_relay.ts`.
// Under Deno, aedes needs the same two stream fixes as the server (DESIGN pitfall 4): `read()`
// returning everything buffered, and one WebSocket message per packet; nothing else is shared.
//
//   deno run -A tests/bench/aedes_relay_server.ts
import { createServer } from "node:http";
import net from "node:net";
import { Aedes } from "aedes";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { patchRead } from "../../server/broker/read_patch.ts";
import { wsToStream } from "../../server/net/ws_stream.ts";

/** The part of aedes this relay uses (its typings lag behind the 2.0 beta's API). */
interface BareAedes {
  handle(stream: unknown): void;
}
const aedes = await (Aedes as unknown as { createBroker(): Promise<BareAedes> }).createBroker();
// One port for both transports, as `nixmsg serve` does: HTTP upgrades go to WebSocket.
const http = createServer();
const wss = new WebSocketServer({ server: http, path: "/mqtt" });
const serve = (stream: Duplex) => {
  patchRead(stream);
  aedes.handle(stream);
};
wss.on("connection", (socket) => serve(wsToStream(socket)));
http.listen(0, "127.0.0.1", () => {
  const { port } = http.address() as { port: number };
  const tcp = net.createServer((s) => {
    s.setNoDelay(true);
    serve(s);
  });
  tcp.listen(0, "127.0.0.1", () => {
    const tcpPort = (tcp.address() as { port: number }).port;
    console.log(`port ${port} ${tcpPort}`);
  });
});
