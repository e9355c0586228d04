import assert from "node:assert/strict";
import type { IDisconnectPacket } from "mqtt";
import { client, end, event, PASSWORD, RawClient, startBroker } from "./_test_utils.ts";

const transports = ["tcp", "ws"] as const;
const versions = [5, 4] as const;
const bytes = (text: string) => new TextEncoder().encode(text);

for (const transport of transports) {
  for (const version of versions) {
    Deno.test(`broker.publish reaches the down topic (MQTT ${version}, ${transport})`, async () => {
      const t = await startBroker();
      const c = client(t.url(transport), "dev1", { protocolVersion: version });
      const got: Array<[string, string, number]> = [];
      c.on("message", (topic, payload, packet) => {
        got.push([topic, payload.toString(), packet.qos]);
        t.log.notify();
      });
      try {
        await event(c, "connect");
        await t.log.until(() => t.log.connected.length === 1);
        const code = t.log.codeOf("dev1");
        assert.equal(await t.broker.publish(code, bytes("first"), 1), "acked");
        assert.equal(await t.broker.publish(code, bytes("second"), 0), "sent");
        await t.log.until(() => got.length === 2, "two downlinks");
        assert.deepEqual(got, [
          ["nix/c/dev1/down", "first", 1],
          ["nix/c/dev1/down", "second", 0],
        ]);
      } finally {
        await end(c);
        await t.close();
      }
    });
  }
}

Deno.test("many QoS 1 downlinks in flight are all acked and arrive in order", async () => {
  const t = await startBroker();
  const c = client(t.url("ws"), "dev1");
  const got: string[] = [];
  c.on("message", (_topic, payload) => got.push(payload.toString()));
  try {
    await event(c, "connect");
    await t.log.until(() => t.log.connected.length === 1);
    const code = t.log.codeOf("dev1");
    const texts = Array.from({ length: 500 }, (_, i) => `m${i}`);
    const outcomes = await Promise.all(texts.map((s) => t.broker.publish(code, bytes(s), 1)));
    assert.deepEqual(new Set(outcomes), new Set(["acked"]));
    assert.deepEqual(got, texts);
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("broker.post sends what publish sends, in order with it, and ignores gone clients", async () => {
  const t = await startBroker();
  const c = client(t.url("ws"), "dev1");
  const got: Array<[string, number]> = [];
  c.on("message", (_topic, payload, packet) => {
    got.push([payload.toString(), packet.qos]);
    t.log.notify();
  });
  try {
    t.broker.post("0000000000000000", bytes("nobody"), 1); // unknown: nothing, no throw
    await event(c, "connect");
    await t.log.until(() => t.log.connected.length === 1);
    const code = t.log.codeOf("dev1");
    t.broker.post(code, bytes("p1"), 1);
    const acked = t.broker.publish(code, bytes("p2"), 1);
    t.broker.post(code, bytes("p3"), 0);
    assert.equal(await acked, "acked");
    await t.log.until(() => got.length === 3, "three downlinks");
    assert.deepEqual(got, [["p1", 1], ["p2", 1], ["p3", 0]]);
    // Posted QoS 1 downlinks hold a slot until their PUBACK like published ones: 1,000 of them
    // (Receive Maximum is 65,535 here, the adapter's window 1,024) all arrive.
    for (let i = 0; i < 1000; i++) t.broker.post(code, bytes(`q${i}`), 1);
    await t.log.until(() => got.length === 1003, "1,000 posted downlinks");
    assert.equal(await t.broker.publish(code, bytes("last"), 1), "acked");
    await end(c);
    await t.log.until(() => t.log.disconnected.length === 1);
    t.broker.post(code, bytes("gone"), 1); // gone: nothing, no throw
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("broker.publish to an unknown or gone client resolves dropped", async () => {
  const t = await startBroker();
  const c = client(t.url("tcp"), "dev1");
  try {
    assert.equal(await t.broker.publish("0000000000000000", bytes("x"), 1), "dropped");
    await event(c, "connect");
    await t.log.until(() => t.log.connected.length === 1);
    const code = t.log.codeOf("dev1");
    await end(c);
    await t.log.until(() => t.log.disconnected.length === 1);
    assert.equal(await t.broker.publish(code, bytes("x"), 1), "dropped");
    assert.equal(await t.broker.publish(code, bytes("x"), 0), "dropped");
  } finally {
    await end(c);
    await t.close();
  }
});

for (const transport of transports) {
  Deno.test(`unacknowledged downlinks are dropped when the ${transport} connection closes`, async () => {
    const t = await startBroker();
    const raw = await RawClient.open(t.url(transport));
    try {
      // Receive Maximum 2: a third QoS 1 downlink cannot be sent [MQTT-3.3.4-9].
      await raw.send({
        cmd: "connect",
        protocolVersion: 5,
        clientId: "dev1",
        username: "dev1",
        password: PASSWORD,
        properties: { receiveMaximum: 2 },
      });
      await t.log.until(() => t.log.connected.length === 1);
      const code = t.log.codeOf("dev1");
      const first = t.broker.publish(code, bytes("a"), 1);
      const second = t.broker.publish(code, bytes("b"), 1);
      assert.equal(await t.broker.publish(code, bytes("c"), 1), "dropped");
      await raw.until(() => raw.of("publish").length === 2, "two publishes");
      assert.deepEqual(raw.of("publish").map((p) => p.payload.toString()), ["a", "b"]);
      // The client acknowledges only the second one, then goes away.
      await raw.send({ cmd: "puback", messageId: raw.of("publish")[1].messageId });
      assert.equal(await second, "acked");
      await raw.close();
      assert.equal(await first, "dropped");
    } finally {
      await raw.close();
      await t.close();
    }
  });
}

Deno.test("a downlink above the client's Maximum Packet Size is dropped", async () => {
  const t = await startBroker();
  const c = client(t.url("tcp"), "dev1", { properties: { maximumPacketSize: 100 } });
  try {
    await event(c, "connect");
    await t.log.until(() => t.log.connected.length === 1);
    const code = t.log.codeOf("dev1");
    // Fixed header 2 + topic 17 + id 2 + properties 1 = 22 bytes around the payload.
    assert.equal(await t.broker.publish(code, new Uint8Array(79), 1), "dropped");
    assert.equal(await t.broker.publish(code, new Uint8Array(78), 1), "acked");
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("broker.disconnect sends the MQTT 5 reason code and fires disconnected", async () => {
  const t = await startBroker();
  const v5 = client(t.url("ws"), "dev1");
  const v4 = client(t.url("tcp"), "dev2", { protocolVersion: 4 });
  try {
    await Promise.all([event(v5, "connect"), event(v4, "connect")]);
    await t.log.until(() => t.log.connected.length === 2);
    const kicked = event<[IDisconnectPacket]>(v5, "disconnect");
    t.broker.disconnect(t.log.codeOf("dev1"), 0x98);
    assert.equal((await kicked)[0].reasonCode, 0x98);
    const closed = event(v4, "close");
    t.broker.disconnect(t.log.codeOf("dev2"), 0x98);
    await closed;
    t.broker.disconnect("unknown", 0x98); // no-op
    await t.log.until(() => t.log.disconnected.length === 2);
    assert.deepEqual(t.log.disconnected.map((d) => d.clientId).sort(), ["dev1", "dev2"]);
    assert.equal(t.broker.clientCount(), 0);
  } finally {
    await end(v5, v4);
    await t.close();
  }
});

Deno.test("close disconnects every client with 0x8B and fires disconnected", async () => {
  const t = await startBroker();
  const a = client(t.url("tcp"), "dev1");
  const b = client(t.url("ws"), "dev2");
  const pending = await RawClient.open(t.url("tcp")); // never sends CONNECT
  try {
    await Promise.all([event(a, "connect"), event(b, "connect")]);
    await t.log.until(() => t.log.connected.length === 2);
    const kicks = [a, b].map((c) => event<[IDisconnectPacket]>(c, "disconnect"));
    await t.broker.close();
    const reasons = (await Promise.all(kicks)).map(([p]) => p.reasonCode);
    assert.deepEqual(reasons, [0x8b, 0x8b]);
    assert.equal(t.log.disconnected.length, 2);
    await pending.until(() => pending.closed, "idle connection closed");
  } finally {
    await end(a, b);
    await pending.close();
    await t.close();
  }
});

for (const transport of transports) {
  Deno.test(`close delivers every downlink already written before 0x8B over ${transport}`, async () => {
    const t = await startBroker();
    const raw = await RawClient.open(t.url(transport));
    try {
      await raw.send({
        cmd: "connect",
        protocolVersion: 5,
        clientId: "dev1",
        username: "dev1",
        password: PASSWORD,
      });
      await raw.until(() => raw.of("connack").length === 1, "CONNACK");
      await t.log.until(() => t.log.connected.length === 1);
      const code = t.log.codeOf("dev1");
      // About 10 MB queued at once: far more than one socket write takes.
      const body = new Uint8Array(20_000).fill(0x61);
      const sent = Array.from({ length: 500 }, () => t.broker.publish(code, body, 0));
      await t.broker.close();
      await Promise.all(sent);
      await raw.until(() => raw.closed, "close");
      assert.equal(raw.of("publish").length, 500, "every downlink arrived");
      assert.deepEqual(raw.packets.at(-1)?.cmd, "disconnect");
      assert.equal(raw.packets.at(-1)?.reasonCode, 0x8b);
    } finally {
      await raw.close();
      await t.close();
    }
  });
}
