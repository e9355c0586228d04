// The Go SDK report: responses said `Connection: keep-alive`, but the server closed the connection
// after each one, so a client that reused it for `POST /api/client/register` got a reset or EOF.
// Against the real server: several requests on one connection, 50 registrations through a
// keep-alive agent, and the idle connection closed at `timeouts.http_headers_seconds`.
import assert from "node:assert/strict";
import { Agent, request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";
import { closeOf, connectTcp, within } from "../server/net/_test_util.ts";
import { WireReader, wireRequest } from "../server/net/_http_wire.ts";

const CODE = "CODE-1234567890";
const REGISTER = "/api/client/register";

async function openServer(headersSeconds = 10): Promise<TestServer> {
  const t = await startTestServer({
    timeouts: { http_headers_seconds: headersSeconds },
    // 50 registrations in a row from one address: above the per-address rate (issue 28).
    limits: { registrations_per_ip_per_minute: 100 },
  });
  await t.setSetting("registration_enabled", "true");
  await t.setSetting("registration_code", CODE);
  return t;
}

Deno.test("GET, a registration POST and GET on one raw connection are each answered", async () => {
  const t = await openServer();
  const socket = await connectTcp(t.port);
  const wire = new WireReader(socket);
  try {
    socket.write(wireRequest("GET", "/healthz"));
    const health = await wire.next();
    assert.equal(health.status, 200);
    assert.equal(health.headers.connection, "keep-alive");

    const body = JSON.stringify({
      registration_code: CODE,
      id: "raw-1",
      login_password: "pw-123456",
    });
    socket.write(wireRequest("POST", REGISTER, body));
    const registered = await wire.next();
    assert.equal(registered.status, 200, registered.body);
    assert.deepEqual(JSON.parse(registered.body), { ok: true, data: { id: "raw-1" } });

    // The last two pipelined in one write.
    const again = JSON.stringify({
      registration_code: CODE,
      id: "raw-2",
      login_password: "pw-123456",
    });
    socket.write(wireRequest("POST", REGISTER, again) + wireRequest("GET", "/readyz"));
    assert.deepEqual(JSON.parse((await wire.next()).body), { ok: true, data: { id: "raw-2" } });
    assert.equal((await wire.next()).status, 200);
    assert.equal(wire.closed, false);
  } finally {
    socket.destroy();
    await t.close();
  }
});

/** POSTs a registration through `agent`; resolves with the status, body and client socket. */
function registerVia(agent: Agent, port: number, id: string): Promise<[number, string, Socket]> {
  const body = JSON.stringify({ registration_code: CODE, id, login_password: "pw-123456" });
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      path: REGISTER,
      method: "POST",
      headers: { "Content-Type": "application/json" },
      agent,
    }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => text += c);
      res.on("end", () => resolve([res.statusCode ?? 0, text, req.socket as Socket]));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

Deno.test("50 registrations in a row through a keep-alive agent all succeed on one connection", async () => {
  const t = await openServer();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const sockets = new Set<Socket>();
    for (let i = 0; i < 50; i++) {
      const [status, text, socket] = await within(
        registerVia(agent, t.port, `ka-${i}`),
        `registration ${i}`,
      );
      assert.equal(status, 200, `registration ${i}: ${text}`);
      sockets.add(socket);
    }
    assert.equal(sockets.size, 1, "every registration reused the first connection");
    // And a pooling fetch client sees every reply too.
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${t.httpUrl}/healthz`);
      assert.equal(r.status, 200);
      await r.body?.cancel();
    }
  } finally {
    agent.destroy();
    await t.close();
  }
});

Deno.test("an idle keep-alive connection is closed after timeouts.http_headers_seconds", async () => {
  const t = await openServer(0.5);
  const socket = await connectTcp(t.port);
  const wire = new WireReader(socket);
  const closed = closeOf(socket);
  try {
    socket.write(wireRequest("GET", "/healthz"));
    const r = await wire.next();
    const answeredAt = Date.now();
    assert.equal(r.headers.connection, "keep-alive");
    await closed;
    const ms = Date.now() - answeredAt;
    assert.ok(ms >= 400 && ms < 1400, `closed after ${ms} ms`);
  } finally {
    socket.destroy();
    await t.close();
  }
});
