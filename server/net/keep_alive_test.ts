// HTTP/1.1 keep-alive on the one-port listener: several requests on one connection, each
// answered; the idle connection closed at the header deadline; and the slow-peer deadlines kept.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Agent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { withListeners } from "./_listener_harness.ts";
import { closeOf, connectTcp, HAS_OPENSSL, makeCert, within } from "./_test_util.ts";
import { WireReader, wireRequest } from "./_http_wire.ts";

const SHORT = { timeouts: { http_headers_seconds: 0.5, http_body_seconds: 2 } };

// Before the fix the server closed the connection after the first response, although that
// response said `Connection: keep-alive`.
Deno.test("sequential and pipelined requests on one connection are each answered", async () => {
  await withListeners({}, async ({ listeners }) => {
    const socket = await connectTcp(listeners.listen.port);
    const wire = new WireReader(socket);
    try {
      socket.write(wireRequest("GET", "/healthz"));
      const first = await wire.next();
      assert.equal(first.status, 200);
      assert.equal(first.headers.connection, "keep-alive");

      const padded = JSON.stringify({ pad: "x".repeat(50) });
      socket.write(wireRequest("POST", "/api/client/body", padded));
      const second = await wire.next();
      assert.equal(second.status, 200, second.body);
      assert.equal(JSON.parse(second.body).bytes, padded.length);

      socket.write(wireRequest("GET", "/api/client/x"));
      const third = await wire.next();
      assert.equal(third.status, 200);
      assert.equal(JSON.parse(third.body).route, "client");

      // Pipelined: three requests in one write, answered in order.
      socket.write(
        wireRequest("POST", "/api/client/body", "abc") + wireRequest("GET", "/healthz") +
          wireRequest("POST", "/api/client/body", "abcdefgh"),
      );
      assert.equal(JSON.parse((await wire.next()).body).bytes, 3);
      assert.equal((await wire.next()).body, JSON.stringify({ ok: true }));
      assert.equal(JSON.parse((await wire.next()).body).bytes, 8);
      assert.equal(wire.closed, false);
    } finally {
      socket.destroy();
    }
  });
});

/** POSTs `body` through `agent`; resolves with the status and the client socket used. */
function postVia(
  agent: Agent,
  port: number,
  body: string,
  tls = false,
): Promise<[number, Socket]> {
  const send = tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send({
      host: "127.0.0.1",
      port,
      path: "/api/client/body",
      method: "POST",
      headers: { "Content-Type": "application/json" },
      agent,
      rejectUnauthorized: false,
    }, (res) => {
      res.resume();
      res.on("end", () => resolve([res.statusCode ?? 0, req.socket as Socket]));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

Deno.test("a keep-alive client makes 50 sequential POSTs on one connection without an error", async () => {
  await withListeners({}, async ({ listeners }) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<Socket>();
      for (let i = 0; i < 50; i++) {
        const [status, socket] = await within(
          postVia(agent, listeners.listen.port, JSON.stringify({ i })),
          `POST ${i}`,
        );
        assert.equal(status, 200, `POST ${i}`);
        sockets.add(socket);
      }
      assert.equal(sockets.size, 1, "every request reused the first connection");
    } finally {
      agent.destroy();
    }
  });
});

Deno.test({
  name: "keep-alive works over TLS too",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const cert = await makeCert(dir, "ka");
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
    try {
      await withListeners(
        { tls: { cert_file: cert.certFile, key_file: cert.keyFile } },
        async ({ listeners }) => {
          const sockets = new Set<Socket>();
          for (let i = 0; i < 10; i++) {
            const sent = postVia(agent, listeners.listen.port, JSON.stringify({ i }), true);
            const [status, socket] = await within(sent, `POST ${i}`);
            assert.equal(status, 200, `POST ${i}`);
            sockets.add(socket);
          }
          assert.equal(sockets.size, 1, "every request reused the first connection");
        },
      );
    } finally {
      agent.destroy();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("an idle keep-alive connection is closed at the header deadline, quietly", async () => {
  await withListeners(SHORT, async ({ listeners, lines }) => {
    const socket = await connectTcp(listeners.listen.port);
    const wire = new WireReader(socket);
    const closed = closeOf(socket);
    socket.write(wireRequest("GET", "/healthz"));
    const r = await wire.next();
    const answeredAt = Date.now();
    assert.equal(r.status, 200);
    assert.equal(r.headers.connection, "keep-alive");
    await closed;
    const ms = Date.now() - answeredAt;
    assert.ok(ms >= 400 && ms < 1400, `closed after ${ms} ms`);
    assert.ok(lines.some((l) => l.msg === "HTTP keep-alive connection closed: idle"));
    assert.ok(!lines.some((l) => l.msg === "HTTP connection closed: deadline passed"));
  });
});

Deno.test("next request's headers that drip in on a kept-alive connection are cut off", async () => {
  await withListeners(SHORT, async ({ listeners, lines }) => {
    const socket = await connectTcp(listeners.listen.port);
    const wire = new WireReader(socket);
    const closed = closeOf(socket);
    socket.write(wireRequest("GET", "/healthz"));
    assert.equal((await wire.next()).status, 200);
    const start = Date.now();
    socket.write("GET /healthz HTTP/1.1\r\n");
    const timer = setInterval(() => socket.destroyed || socket.write("X-Drip: 1\r\n"), 100);
    try {
      await closed;
    } finally {
      clearInterval(timer);
    }
    const ms = Date.now() - start;
    assert.ok(ms >= 300 && ms < 1400, `closed after ${ms} ms`);
    const line = lines.find((l) => l.msg === "HTTP connection closed: deadline passed");
    assert.equal(line?.phase, "headers");
  });
});

Deno.test("a pipelined request keeps its body deadline when the response before it finishes", async () => {
  await withListeners(SHORT, async ({ listeners }) => {
    const socket = await connectTcp(listeners.listen.port);
    const wire = new WireReader(socket);
    try {
      const head = "POST /api/client/body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n";
      socket.write(wireRequest("GET", "/healthz") + head);
      assert.equal((await wire.next()).status, 200);
      // Past the 0.5 s header deadline, within the 2 s body deadline of the second request.
      await new Promise((resolve) => setTimeout(resolve, 800));
      socket.write("abcd");
      const r = await wire.next();
      assert.equal(JSON.parse(r.body).bytes, 4);
    } finally {
      socket.destroy();
    }
  });
});

Deno.test("once accepting stops, a kept-alive connection is answered with Connection: close and closed", async () => {
  await withListeners({}, async ({ listeners }) => {
    const socket = await connectTcp(listeners.listen.port);
    const wire = new WireReader(socket);
    const closed = closeOf(socket);
    socket.write(wireRequest("GET", "/healthz"));
    assert.equal((await wire.next()).headers.connection, "keep-alive");
    listeners.stopAccepting();
    socket.write(wireRequest("GET", "/healthz"));
    const r = await wire.next();
    assert.equal(r.status, 200);
    assert.equal(r.headers.connection, "close");
    assert.ok(Buffer.isBuffer(await closed));
  });
});
