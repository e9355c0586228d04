import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocket } from "ws";
import { memoryLog } from "./_test_util.ts";
import type { MqttConn } from "./types.ts";
import { CLOSE_PROTOCOL_ERROR, createWsUpgrader } from "./ws_upgrade.ts";

const PEER = { remoteAddress: "203.0.113.7", secure: true };

/** An HTTP server on port 0 whose upgrades go through the upgrader. */
async function withUpgrader(body: (port: number, conns: MqttConn[]) => Promise<void>) {
  const conns: MqttConn[] = [];
  const upgrader = createWsUpgrader({
    onMqtt: (c) => conns.push(c),
    log: memoryLog().log,
    maxQueuedBytes: 8 << 20,
  });
  const server = createServer();
  server.on("upgrade", (req, socket, head) => upgrader.upgrade(req, socket, head, PEER));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    await body((server.address() as AddressInfo).port, conns);
  } finally {
    for (const c of conns) if (c.transport === "ws") c.ws.terminate();
    upgrader.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
}

function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once("close", (code) => resolve(code)));
}

Deno.test("an upgrade offering subprotocol mqtt reaches onMqtt as a ws connection", async () => {
  await withUpgrader(async (port, conns) => {
    // A browser on another origin must get through: no Origin check (spec 4.4).
    const client = new WebSocket(`ws://127.0.0.1:${port}/mqtt`, ["mqttv3.1", "mqtt"], {
      headers: { Origin: "https://app.example.com" },
    });
    await opened(client);
    assert.equal(client.protocol, "mqtt");
    assert.equal(conns.length, 1);
    const conn = conns[0];
    assert.equal(conn.transport, "ws");
    assert.equal(conn.remoteAddress, "203.0.113.7");
    assert.equal(conn.secure, true);
    if (conn.transport !== "ws") return;
    const got = new Promise<Uint8Array>((r) => conn.ws.once("message", (d) => r(d as Uint8Array)));
    client.send(new Uint8Array([0x10, 0x00]));
    assert.deepEqual([...await got], [0x10, 0x00]);
    const done = closed(client);
    client.close();
    await done;
  });
});

Deno.test("an upgrade without subprotocol mqtt is closed with 1002 and never reaches MQTT", async () => {
  await withUpgrader(async (port, conns) => {
    const client = new WebSocket(`ws://127.0.0.1:${port}/mqtt`);
    const code = closed(client);
    await opened(client);
    assert.equal(await code, CLOSE_PROTOCOL_ERROR);
    assert.equal(conns.length, 0);
  });
});
