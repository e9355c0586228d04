import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { withListeners } from "./_listener_harness.ts";
import { closeOf, connectTcp, fetchHttp } from "./_test_util.ts";

const SHORT = { timeouts: { http_headers_seconds: 0.5, http_body_seconds: 1 } };

/** Writes `line` every 100 ms until the socket closes; resolves with the ms it stayed open. */
async function drip(socket: Socket, first: string, line: string): Promise<number> {
  const start = Date.now();
  const closed = closeOf(socket);
  socket.write(first);
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(line);
  }, 100);
  try {
    // closeOf gives up after 5 s: a connection the idle timer alone would keep for 120 s.
    await closed;
  } finally {
    clearInterval(timer);
  }
  return Date.now() - start;
}

// issue 10 item 10: each byte used to restart the idle timer, so a drip kept the connection.
Deno.test("headers that drip in are cut off at the header deadline", async () => {
  await withListeners(SHORT, async ({ listeners }) => {
    const socket = await connectTcp(listeners.listen.port);
    const ms = await drip(socket, "GET /healthz HTTP/1.1\r\n", "X-Drip: 1\r\n");
    assert.ok(ms >= 400 && ms < 3000, `closed after ${ms} ms`);
    assert.equal((await fetchHttp(listeners.listen.port, "/healthz")).status, 200);
  });
});

Deno.test("a body that drips in is cut off at the body deadline", async () => {
  await withListeners(SHORT, async ({ listeners }) => {
    const socket = await connectTcp(listeners.listen.port);
    const head = "POST /api/client/body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    const ms = await drip(socket, head, "a");
    assert.ok(ms >= 900 && ms < 4000, `closed after ${ms} ms`);
  });
});

Deno.test("a request that arrives in time is answered, body and all", async () => {
  await withListeners(SHORT, async ({ listeners }) => {
    const r = await fetchHttp(listeners.listen.port, "/api/client/body", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ pad: "x".repeat(10_000) }),
    });
    assert.equal(r.status, 200);
    assert.ok(((r.json as { bytes: number }).bytes) > 10_000);
  });
});

Deno.test("connections past max_http_connections are closed at once and logged", async () => {
  // The per-address share (issue 28) is lifted to the total: this is about the total.
  const limits = { max_http_connections: 3, max_http_connections_per_ip: 4 };
  await withListeners({ limits }, async ({ listeners, lines }) => {
    const port = listeners.listen.port;
    const held: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await connectTcp(port);
      s.on("error", () => {});
      s.write("GET /healthz HTTP/1.1\r\n");
      held.push(s);
    }
    // Wait until all three are HTTP connections (their first bytes were sniffed).
    const refused = await connectTcp(port);
    const gone = closeOf(refused);
    refused.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.equal((await gone).length, 0);
    const warn = lines.find((l) => l.msg === "HTTP connection refused: too many open");
    assert.equal(warn?.max_http_connections, 3);

    held[0].destroy();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = await fetchHttp(port, "/healthz").then((r) => r.status, () => 0);
    }
    assert.equal(status, 200);
    for (const s of held) s.destroy();
  });
});
