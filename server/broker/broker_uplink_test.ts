import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { IDisconnectPacket } from "mqtt";
import { client, encode, end, event, RawClient, received, startBroker } from "./_test_utils.ts";
import { aedesForTests, MAX_PACKET_SIZE } from "./broker.ts";

const transports = ["tcp", "ws"] as const;
const versions = [5, 4] as const;

for (const transport of transports) {
  for (const version of versions) {
    Deno.test(`a publish to the own up topic reaches the app (MQTT ${version}, ${transport})`, async () => {
      const t = await startBroker();
      const c = client(t.url(transport), "dev1", { protocolVersion: version });
      try {
        await event(c, "connect");
        await c.publishAsync("nix/c/dev1/up", "one", { qos: 1 }); // resolves on PUBACK
        await c.publishAsync("nix/c/dev1/up", "two", { qos: 0 });
        await t.log.until(() => t.log.messages.length === 2, "two messages");
        const code = t.log.codeOf("dev1");
        assert.deepEqual(t.log.messages, [
          { connCode: code, text: "one" },
          { connCode: code, text: "two" },
        ]);
      } finally {
        await end(c);
        await t.close();
      }
    });
  }
}

Deno.test("PUBACK is sent only after the message hook settles", async () => {
  const t = await startBroker();
  let release = () => {};
  t.log.onMessage = () => new Promise<void>((resolve) => release = resolve);
  const c = client(t.url("tcp"), "dev1");
  const cmds = received(c);
  try {
    await event(c, "connect");
    const acked = c.publishAsync("nix/c/dev1/up", "slow", { qos: 1 });
    await t.log.until(() => t.log.messages.length === 1);
    // A downlink round trip: an eager PUBACK would have arrived before it.
    assert.equal(await t.broker.publish(t.log.codeOf("dev1"), new Uint8Array([1]), 1), "acked");
    assert.equal(cmds.includes("puback"), false);
    release();
    await acked;
    assert.equal(cmds.includes("puback"), true);
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("a failing message hook closes the connection without PUBACK", async () => {
  const t = await startBroker();
  t.log.onMessage = () => Promise.reject(new Error("queue gone"));
  const c = client(t.url("ws"), "dev1");
  const cmds = received(c);
  try {
    await event(c, "connect");
    const closed = event(c, "close");
    c.publish("nix/c/dev1/up", "lost", { qos: 1 });
    await closed;
    assert.deepEqual(cmds, ["connack"]);
    await t.log.until(() => t.log.disconnected.length === 1);
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("a publish to the own up topic is handed to the app and never forwarded", async () => {
  const t = await startBroker();
  // No client may subscribe to an up topic (ACL), so listen inside aedes itself: nothing a
  // client publishes may be routed (spec 5 CodeSuccessIgnore).
  const aedes = aedesForTests(t.broker);
  const forwarded: string[] = [];
  const listener = (packet: { topic: string }, cb: () => void) => {
    forwarded.push(packet.topic);
    cb();
  };
  await new Promise((resolve) => aedes.subscribe("nix/c/#", listener, resolve));
  const a = client(t.url("tcp"), "dev1");
  const b = client(t.url("ws"), "dev2");
  const messages: string[] = [];
  a.on("message", (topic) => messages.push(`dev1 got ${topic}`));
  b.on("message", (topic) => messages.push(`dev2 got ${topic}`));
  try {
    await Promise.all([event(a, "connect"), event(b, "connect")]);
    await Promise.all([a.subscribeAsync("nix/c/dev1/down"), b.subscribeAsync("nix/c/dev2/down")]);
    await a.publishAsync("nix/c/dev1/up", "hi", { qos: 1 });
    // aedes reads the next packet only after it finished routing the previous one.
    await a.publishAsync("nix/c/dev1/up", "barrier", { qos: 1 });
    await t.log.until(() => t.log.messages.length === 2);
    assert.deepEqual(t.log.messages.map((m) => m.text), ["hi", "barrier"]);
    assert.deepEqual(forwarded, []);
    // Downlinks are written to the one connection, not routed either.
    await t.broker.publish(t.log.codeOf("dev1"), new Uint8Array([1]), 1);
    await t.broker.publish(t.log.codeOf("dev2"), new Uint8Array([2]), 1);
    assert.deepEqual(messages, ["dev1 got nix/c/dev1/down", "dev2 got nix/c/dev2/down"]);
    assert.deepEqual(forwarded, []);
  } finally {
    await end(a, b);
    await new Promise((resolve) => aedes.unsubscribe("nix/c/#", listener, resolve));
    await t.close();
  }
});

Deno.test("MQTT 5 publishes outside the own up topic get PUBACK 0x80 (obscured) or are dropped", async () => {
  const t = await startBroker();
  const c = client(t.url("tcp"), "dev1");
  try {
    await event(c, "connect");
    await assert.rejects(c.publishAsync("nix/c/dev2/up", "x", { qos: 1 }), { code: 0x80 });
    await assert.rejects(c.publishAsync("nix/c/dev1/down", "x", { qos: 1 }), { code: 0x80 });
    await c.publishAsync("elsewhere", "dropped", { qos: 0 });
    await c.publishAsync("nix/c/dev1/up", "kept", { qos: 1 });
    assert.deepEqual(t.log.messages.map((m) => m.text), ["kept"]);
    assert.equal(c.connected, true);
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("an MQTT 3.1.1 publish outside the own up topic closes the connection", async () => {
  const t = await startBroker();
  const c = client(t.url("ws"), "dev1", { protocolVersion: 4 });
  const cmds = received(c);
  try {
    await event(c, "connect");
    const closed = event(c, "close");
    c.publish("nix/c/dev2/up", "x", { qos: 1 });
    await closed;
    assert.deepEqual(cmds, ["connack"]);
    assert.equal(t.log.messages.length, 0);
  } finally {
    await end(c);
    await t.close();
  }
});

Deno.test("MQTT 5 QoS 2 and retained publishes are refused with 0x9B and 0x9A", async () => {
  const t = await startBroker();
  try {
    for (
      const [opts, reason] of [[{ qos: 2 as const }, 0x9b], [
        { qos: 1 as const, retain: true },
        0x9a,
      ]] as const
    ) {
      const c = client(t.url("tcp"), "dev1");
      try {
        await event(c, "connect");
        const kicked = event<[IDisconnectPacket]>(c, "disconnect");
        c.publish("nix/c/dev1/up", "x", opts);
        assert.equal((await kicked)[0].reasonCode, reason);
      } finally {
        await end(c);
      }
    }
    assert.equal(t.log.messages.length, 0);
  } finally {
    await t.close();
  }
});

Deno.test("MQTT 3.1.1 QoS 2 publishes complete and reach the app; retain is ignored", async () => {
  const t = await startBroker();
  const c = client(t.url("tcp"), "dev1", { protocolVersion: 4 });
  try {
    await event(c, "connect");
    await c.publishAsync("nix/c/dev1/up", "exactly", { qos: 2 }); // resolves on PUBCOMP
    await c.publishAsync("nix/c/dev1/up", "retained", { qos: 1, retain: true });
    assert.deepEqual(t.log.messages.map((m) => m.text), ["exactly", "retained"]);
  } finally {
    await end(c);
    await t.close();
  }
});

for (const version of versions) {
  Deno.test(`MQTT ${version} subscriptions other than the own down topic are refused`, async () => {
    const t = await startBroker();
    const c = client(t.url("ws"), "dev1", { protocolVersion: version });
    let granted: unknown;
    c.on("packetreceive", (p) => {
      if (p.cmd === "suback") granted = p.granted;
    });
    const topics = ["nix/c/dev1/down", "nix/c/dev2/down", "nix/c/+/down", "#", "nix/c/dev1/up"];
    try {
      await event(c, "connect");
      await c.subscribeAsync(topics, { qos: 2 }).catch(() => {});
      // spec 5 ObscureNotAuthorized: 0x80 "unspecified error", never 0x87 "not authorized".
      const no = 0x80;
      // Granted QoS is at most 1 (spec 5 MaximumQos).
      assert.deepEqual(granted, [1, no, no, no, no]);
      await t.log.until(() => t.log.subscribed.length === 1);
      assert.deepEqual(t.log.subscribed, [{ connCode: t.log.codeOf("dev1"), topic: topics[0] }]);
      assert.equal(c.connected, true);
    } finally {
      await end(c);
      await t.close();
    }
  });
}

Deno.test("a packet above the maximum packet size gets DISCONNECT 0x95", async () => {
  const t = await startBroker();
  const raw = await RawClient.open(t.url("tcp"));
  try {
    await raw.send({
      cmd: "connect",
      protocolVersion: 5,
      clientId: "dev1",
      username: "dev1",
      password: "secret",
    });
    await raw.until(() => raw.of("connack").length === 1);
    const payload = Buffer.alloc(MAX_PACKET_SIZE);
    const packet = encode({
      cmd: "publish",
      topic: "nix/c/dev1/up",
      payload,
      qos: 1,
      messageId: 1,
    });
    // Only the start: the fixed header declares the size, and the server must not wait for the
    // rest [MQTT-3.2.2-15]. (Unread bytes at close would also turn the FIN into a reset.)
    await raw.sendBytes(packet.subarray(0, 64));
    await raw.until(() => raw.closed, "close");
    assert.deepEqual(raw.of("disconnect").map((p) => p.reasonCode), [0x95]);
    assert.equal(t.log.messages.length, 0);
  } finally {
    await raw.close();
    await t.close();
  }
});
