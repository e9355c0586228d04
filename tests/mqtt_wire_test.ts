// The MQTT layer of the real server seen through raw packets and MQTT.js (spec 5, 6.1): the
// configured packet limit, pipelined packets, protocol errors and refused topics.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { online, TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { RawClient } from "../server/broker/_test_utils.ts";

const PW = "device-password-1";

/** A raw MQTT 5 CONNECT of endpoint `id` with the test password. */
function connectPacket(id: string) {
  return { cmd: "connect", protocolVersion: 5, clientId: id, username: id, password: PW };
}

Deno.test("limits.max_frame_bytes is announced in CONNACK and hello, and enforced on packets", async () => {
  const t = await startTestServer({ limits: { max_frame_bytes: 4096 } });
  try {
    await t.createEndpoint("dev1", PW);
    const { client } = await online(t.tcpUrl, "dev1", PW);
    assert.equal(client.connack?.properties?.maximumPacketSize, 4096);
    const hello = client.frames.find((f) => f.type === "resp" && f.rid === "r1");
    assert.equal((hello?.data as Record<string, unknown>).max_frame_bytes, 4096);
    // Just under the limit: the frame is read and answered, the connection stays.
    const under = await client.request({ type: "self.get", pad: "x".repeat(3900) });
    assert.equal(under.ok, true);
    assert.equal(client.connected, true);
    await client.close();

    for (const url of [t.tcpUrl, t.wsUrl]) {
      const raw = await RawClient.open(url);
      try {
        await raw.send(connectPacket("dev1"));
        await raw.until(() => raw.of("connack").length === 1, "CONNACK");
        const packet = {
          cmd: "publish",
          topic: "nix/c/dev1/up",
          payload: Buffer.alloc(4200, 0x20),
          qos: 1,
          messageId: 1,
        };
        await raw.send(packet);
        await raw.until(() => raw.closed, "close");
        assert.deepEqual(raw.of("disconnect").map((p) => p.reasonCode), [0x95], url);
        assert.equal(raw.of("puback").length, 0);
      } finally {
        await raw.close();
      }
    }
  } finally {
    await t.close();
  }
});
