import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type net from "node:net";
import { encode, PASSWORD, RawClient, startBroker } from "./_test_utils.ts";

// DESIGN pitfall 4: Deno's read() returns only the first buffered chunk and emits no new
// `readable` while data remains. aedes reads once more after each handled packet, so without
// the patch every chunk that holds no complete packet ends one such read chain; a packet split
// over several chunks buffered during authenticate ends them all and the connection stalls.
for (const transport of ["tcp", "ws"] as const) {
  Deno.test(`chunks buffered during authenticate are all processed over ${transport}`, async () => {
    const t = await startBroker();
    let release = () => {};
    const gate = new Promise<void>((resolve) => release = resolve);
    t.log.auth = async () => {
      await gate;
      return { ok: true };
    };
    // Count the bytes that reached the server, without reading them.
    let arrived = 0;
    t.onSocket = (socket: net.Socket) => {
      const push = socket.push.bind(socket);
      socket.push = (chunk, encoding) => {
        if (chunk) arrived += chunk.length;
        t.log.notify();
        return push(chunk, encoding);
      };
    };
    t.onWs = (ws) => {
      ws.on("message", (data: Buffer) => {
        arrived += data.length;
        t.log.notify();
      });
    };
    const raw = await RawClient.open(t.url(transport));
    try {
      const connect = encode({
        cmd: "connect",
        protocolVersion: 5,
        clientId: "dev1",
        username: "dev1",
        password: PASSWORD,
      });
      await raw.sendBytes(connect);
      await t.log.until(() => t.log.authenticated.length === 1, "authenticate");

      const publish = (i: number) =>
        encode({
          cmd: "publish",
          topic: "nix/c/dev1/up",
          payload: Buffer.from(`m${i}`),
          qos: 1,
          messageId: 10 + i,
        });
      const split = publish(2);
      const chunks = [
        encode({
          cmd: "subscribe",
          messageId: 1,
          subscriptions: [{ topic: "nix/c/dev1/down", qos: 1 }],
        }),
        publish(1),
        split.subarray(0, 3),
        split.subarray(3, 6),
        split.subarray(6, 9),
        split.subarray(9),
        publish(3),
        publish(4),
        publish(5),
      ];
      // One write each, and each waits until the previous arrived: separate buffered chunks.
      let total = connect.length;
      for (const chunk of chunks) {
        total += chunk.length;
        await raw.sendBytes(chunk);
        await t.log.until(() => arrived === total, "chunk arrival");
      }
      release();

      await raw.until(() => raw.of("puback").length === 5, "five PUBACKs");
      assert.deepEqual(raw.of("connack").map((p) => p.reasonCode), [0]);
      assert.deepEqual(raw.of("suback").map((p) => p.granted), [[1]]);
      assert.deepEqual(raw.of("puback").map((p) => p.messageId), [11, 12, 13, 14, 15]);
      assert.deepEqual(t.log.messages.map((m) => m.text), ["m1", "m2", "m3", "m4", "m5"]);
      assert.deepEqual(t.log.subscribed.map((s) => s.topic), ["nix/c/dev1/down"]);
    } finally {
      release();
      await raw.close();
      await t.close();
    }
  });
}
