import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { WebSocket } from "ws";
import { silentLogger } from "../log/log.ts";
import { createRouter } from "../http/router.ts";
import { listenerScopes, startListeners } from "./listener.ts";
import { withListeners } from "./_listener_harness.ts";
import { closeOf, connectTcp, fetchHttp, HAS_IPV6, testConfig, within } from "./_test_util.ts";

interface Echo {
  route: string;
  peer: { remoteAddress: string; secure: boolean };
}

function opened(ws: WebSocket): Promise<void> {
  const open = new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return within(open, "the WebSocket to open");
}

function closeCode(ws: WebSocket): Promise<number> {
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  return within(closed, "the WebSocket to close").catch((err) => {
    ws.terminate();
    throw err;
  });
}

function upgradeFails(ws: WebSocket): Promise<Error> {
  const failed = new Promise<Error>((resolve) => ws.once("error", resolve));
  return within(failed, "the upgrade to fail").catch((err) => {
    ws.terminate();
    throw err;
  });
}

Deno.test("listenerScopes splits the scopes only when admin_listen is set (spec 4.3)", () => {
  assert.deepEqual([...listenerScopes("listen", false)].sort(), ["admin", "client", "health"]);
  assert.deepEqual([...listenerScopes("listen", true)].sort(), ["client", "health"]);
  assert.deepEqual([...listenerScopes("admin", true)].sort(), ["admin", "health"]);
});

Deno.test("startListeners writes listen.addr with the real port and serves there", async () => {
  await withListeners({}, async ({ listeners, dataDir, lines }) => {
    assert.notEqual(listeners.listen.port, 0);
    assert.equal(listeners.admin, null);
    const addr = await readFile(join(dataDir, "listen.addr"), "utf8");
    assert.equal(addr, `127.0.0.1:${listeners.listen.port}`);
    const r = await fetchHttp(listeners.listen.port, "/healthz");
    assert.equal(r.status, 200);
    // No certificate: plaintext only, said once at start (spec 4.2).
    const warnings = lines.filter((l) => l.level === "warn");
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0].msg), /plaintext/);
  });
});

Deno.test({
  name: "an IPv6 listener writes a bracketed address and sees IPv6 peers",
  ignore: !HAS_IPV6,
  fn: () =>
    withListeners({ listen: "[::1]:0" }, async ({ listeners, dataDir }) => {
      assert.equal(listeners.listen.host, "::1");
      const addr = await readFile(join(dataDir, "listen.addr"), "utf8");
      assert.equal(addr, `[::1]:${listeners.listen.port}`);
      const r = await fetchHttp(listeners.listen.port, "/api/client/x", { host: "::1" });
      assert.deepEqual((r.json as Echo).peer, { remoteAddress: "::1", secure: false });
    }),
});

Deno.test("a wildcard listener writes a dialable address and reports IPv4 peers as IPv4", async () => {
  await withListeners({ listen: ":0" }, async ({ listeners, dataDir }) => {
    const port = listeners.listen.port;
    const addr = await readFile(join(dataDir, "listen.addr"), "utf8");
    assert.ok([`127.0.0.1:${port}`, `[::1]:${port}`].includes(addr), addr);
    // On a dual-stack socket an IPv4 peer shows up as ::ffff:127.0.0.1.
    const r = await fetchHttp(port, "/api/client/x");
    assert.deepEqual((r.json as Echo).peer, { remoteAddress: "127.0.0.1", secure: false });
  });
});

Deno.test("with admin_listen empty, listen serves the client and admin scopes", async () => {
  await withListeners({}, async ({ listeners }) => {
    const port = listeners.listen.port;
    assert.equal(((await fetchHttp(port, "/api/client/x")).json as Echo).route, "client");
    assert.equal(((await fetchHttp(port, "/api/admin/x")).json as Echo).route, "admin");
  });
});

Deno.test("with admin_listen set, each port serves only its own scope (spec 4.3)", async () => {
  await withListeners({ admin_listen: "127.0.0.1:0" }, async ({ listeners, dataDir, nextConn }) => {
    const admin = listeners.admin;
    assert.ok(admin !== null);
    assert.equal(await readFile(join(dataDir, "admin.addr"), "utf8"), `127.0.0.1:${admin.port}`);
    const listen = listeners.listen.port;

    assert.equal((await fetchHttp(listen, "/api/admin/x")).status, 404);
    assert.equal(((await fetchHttp(admin.port, "/api/admin/x")).json as Echo).route, "admin");
    assert.equal(((await fetchHttp(listen, "/api/client/x")).json as Echo).route, "client");
    assert.equal((await fetchHttp(admin.port, "/api/client/x")).status, 404);
    assert.equal((await fetchHttp(listen, "/healthz")).status, 200);
    assert.equal((await fetchHttp(admin.port, "/healthz")).status, 200);

    // Raw MQTT: accepted on listen, closed on admin_listen (spec 4.2).
    const onAdmin = await connectTcp(admin.port);
    const adminGone = closeOf(onAdmin);
    onAdmin.write(Buffer.from([0x10, 0x00]));
    assert.equal((await adminGone).length, 0);
    const onListen = await connectTcp(listen);
    const conn = nextConn();
    onListen.write(Buffer.from([0x10, 0x00]));
    assert.equal((await conn).transport, "tcp");
    onListen.destroy();

    // No WebSocket MQTT on admin_listen either.
    const ws = new WebSocket(`ws://127.0.0.1:${admin.port}/mqtt`, ["mqtt"]);
    await upgradeFails(ws);
  });
});

Deno.test("X-Forwarded-For and -Proto count only from trusted proxies (spec 4.5)", async () => {
  const forwarded = {
    "X-Forwarded-For": "198.51.100.1, 203.0.113.7",
    "X-Forwarded-Proto": "https",
  };
  await withListeners({ trusted_proxies: ["127.0.0.1/32"] }, async ({ listeners, nextConn }) => {
    const port = listeners.listen.port;
    const r = await fetchHttp(port, "/api/client/x", { headers: forwarded });
    assert.deepEqual((r.json as Echo).peer, { remoteAddress: "203.0.113.7", secure: true });

    const conn = nextConn();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/mqtt`, ["mqtt"], { headers: forwarded });
    await opened(ws);
    const c = await conn;
    assert.equal(c.transport, "ws");
    assert.equal(c.remoteAddress, "203.0.113.7");
    assert.equal(c.secure, true);
    const done = closeCode(ws);
    ws.close();
    await done;
  });
  await withListeners({ trusted_proxies: ["10.0.0.0/8"] }, async ({ listeners }) => {
    const r = await fetchHttp(listeners.listen.port, "/api/client/x", { headers: forwarded });
    assert.deepEqual((r.json as Echo).peer, { remoteAddress: "127.0.0.1", secure: false });
  });
});

Deno.test("a WebSocket upgrade on /mqtt with subprotocol mqtt reaches onMqtt", async () => {
  await withListeners({}, async ({ listeners, nextConn, conns }) => {
    const port = listeners.listen.port;
    const conn = nextConn();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/mqtt`, ["mqtt"], {
      headers: { Origin: "https://elsewhere.example" },
    });
    await opened(ws);
    const c = await conn;
    assert.equal(c.transport, "ws");
    assert.equal(c.remoteAddress, "127.0.0.1");
    assert.equal(c.secure, false);
    const done = closeCode(ws);
    ws.close();
    await done;

    // Without the subprotocol the socket is closed and MQTT never sees it.
    const bare = new WebSocket(`ws://127.0.0.1:${port}/mqtt`);
    assert.equal(await closeCode(bare), 1002);
    assert.equal(conns.length, 1);

    // Other upgrade paths are refused.
    await upgradeFails(new WebSocket(`ws://127.0.0.1:${port}/other`, ["mqtt"]));
    assert.equal(conns.length, 1);

    // A plain GET /mqtt is told to upgrade.
    const plain = await fetchHttp(port, "/mqtt");
    assert.equal(plain.status, 426);
  });
});

Deno.test("/readyz through the listener follows ready()", async () => {
  await withListeners({}, async ({ listeners, setReady }) => {
    const port = listeners.listen.port;
    assert.equal((await fetchHttp(port, "/readyz")).status, 200);
    setReady(false);
    assert.equal((await fetchHttp(port, "/readyz")).status, 503);
    setReady(true);
    assert.equal((await fetchHttp(port, "/readyz")).status, 200);
  });
});

Deno.test("a silent connection is closed after first_byte_seconds", async () => {
  await withListeners({ first_byte_seconds: 0.2 }, async ({ listeners, conns }) => {
    const started = Date.now();
    const client = await connectTcp(listeners.listen.port);
    assert.equal((await closeOf(client)).length, 0);
    assert.ok(Date.now() - started >= 180, "closed before the timeout");
    assert.equal(conns.length, 0);
  });
});

Deno.test("garbage first bytes are closed by the listener", async () => {
  await withListeners({}, async ({ listeners, conns }) => {
    for (const first of [0x00, 0x61]) {
      const client = await connectTcp(listeners.listen.port);
      const gone = closeOf(client);
      client.write(Buffer.from([first, 0x20, 0x2f]));
      assert.equal((await gone).length, 0);
    }
    assert.equal(conns.length, 0);
  });
});

Deno.test("close() destroys open connections and stops accepting", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    const listeners = await startListeners({
      config: testConfig({ data_dir: dataDir }),
      log: silentLogger,
      http: createRouter([], { log: silentLogger }),
      onMqtt: () => {},
    });
    const port = listeners.listen.port;
    const mqtt = await connectTcp(port);
    const mqttGone = closeOf(mqtt);
    mqtt.write(Buffer.from([0x10, 0x00]));
    const idle = await connectTcp(port);
    const idleGone = closeOf(idle);
    await listeners.close();
    await mqttGone;
    await idleGone;
    await assert.rejects(connectTcp(port));
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("startListeners rejects when the port is taken, leaving nothing open", async () => {
  const dataDir = await Deno.makeTempDir();
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
  try {
    const port = (taken.address() as { port: number }).port;
    await assert.rejects(
      startListeners({
        config: testConfig({
          data_dir: dataDir,
          listen: "127.0.0.1:0",
          admin_listen: `127.0.0.1:${port}`,
        }),
        log: silentLogger,
        http: createRouter([], { log: silentLogger }),
        onMqtt: () => {},
      }),
      /EADDRINUSE|in use/i,
    );
  } finally {
    await new Promise((r) => taken.close(r));
    await Deno.remove(dataDir, { recursive: true });
  }
});
