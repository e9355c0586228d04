// issue 10 item 11: a client that stops reading is closed once `limits.max_queued_bytes` are
// queued for it, instead of pinning the server's memory; over TCP and over WebSocket.
import assert from "node:assert/strict";
import type { Duplex } from "node:stream";
import { Logger } from "../server/log/log.ts";
import { online, type TestClient } from "./helpers/client.ts";
import { PW, sendNowFrame } from "./helpers/messaging.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { fetchHttp, waitFor } from "../server/net/_test_util.ts";

const BIG = "x".repeat(200_000);
const MESSAGES = 120;

for (const transport of ["tcp", "ws"] as const) {
  Deno.test(`a ${transport} client that stops reading is closed as a slow consumer`, async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = new Logger("info", {}, (l) => lines.push(JSON.parse(l)));
    const t = await startTestServer({
      limits: { max_queued_bytes: 1048576, delivery_window: 128, requests_per_second: 1000 },
      metrics: { token: "metrics-token" },
    }, { log });
    const clients: TestClient[] = [];
    try {
      await t.createEndpoint("a", PW);
      await t.createEndpoint("b", PW);
      const a = (await online(t.wsUrl, "a", PW)).client;
      clients.push(a);
      const b = (await online(transport === "tcp" ? t.tcpUrl : t.wsUrl, "b", PW)).client;
      clients.push(b);
      // b's application stops reading: nothing more is taken off its socket.
      const stream = (b.mqtt as unknown as { stream: Duplex }).stream;
      stream.pause();

      // Each send is answered to a; each is pushed to b (up to the delivery window). The cap can
      // trip before the last answer arrives, so the answers are awaited only after it.
      const sends: Promise<unknown>[] = [];
      for (let i = 0; i < MESSAGES; i++) {
        sends.push(a.request(sendNowFrame(`m${i}`, "b", BIG)).catch((err) => err));
      }

      const slow = () => lines.find((l) => l.msg === "Slow consumer closed");
      await waitFor(() => slow() !== undefined, "the slow consumer to be closed", 30_000);
      await Promise.all(sends);
      assert.equal(slow()!.transport, transport);
      assert.equal(slow()!.max_queued_bytes, 1048576);
      assert.ok(Number(slow()!.queued_bytes) > 1048576);
      stream.resume();
      await b.until(() => b.closed, "b to see its connection closed", 10_000);
      // The sender is not affected.
      assert.equal(a.closed, false);

      const metrics = await fetchHttp(t.port, "/metrics", {
        headers: { Authorization: "Bearer metrics-token" },
      });
      assert.match(metrics.text, /nixmsg_connections_closed_total\{reason="slow_consumer"\} [1-9]/);
    } finally {
      for (const c of clients) await c.close();
      await t.close();
    }
  });
}
