// The MQTT layer of the real server seen through raw packets and MQTT.js (spec 5, 6.1): the
// configured packet limit, pipelined packets, protocol errors and refused topics.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { once } from "node:events";
import net from "node:net";
import { online } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";
import { encode, RawClient } from "../server/broker/_test_utils.ts";

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

/** The JSON frames a raw client received on its down topic. */
function framesOf(raw: RawClient): Record<string, unknown>[] {
  return raw.of("publish").map((p) => JSON.parse(new TextDecoder().decode(p.payload)));
}

/** A QoS 1 PUBLISH of `frame` to the up topic of `id`. */
function requestPacket(id: string, messageId: number, frame: Record<string, unknown>) {
  return {
    cmd: "publish",
    topic: `nix/c/${id}/up`,
    payload: Buffer.from(JSON.stringify({ v: 1, ...frame })),
    qos: 1,
    messageId,
  };
}

/** SUBSCRIBE down, PUBLISH hello and PUBLISH self.get, without waiting in between. */
function pipelinedHandshake(id: string) {
  return [
    { cmd: "subscribe", messageId: 1, subscriptions: [{ topic: `nix/c/${id}/down`, qos: 1 }] },
    requestPacket(id, 2, { type: "hello", rid: "h1", client: "raw/0" }),
    requestPacket(id, 3, { type: "self.get", rid: "s1" }),
  ];
}

/** Waits for both answers of {@linkcode pipelinedHandshake} and checks them. */
async function assertPipelinedAnswers(raw: RawClient, what: string): Promise<void> {
  await raw.until(() => framesOf(raw).length >= 2 || raw.closed, `two answers (${what})`);
  assert.equal(raw.closed, false, `${what}: the connection stays open`);
  const frames = framesOf(raw);
  assert.deepEqual(frames.map((f) => [f.type, f.rid, f.ok]), [
    ["resp", "h1", true],
    ["resp", "s1", true],
  ], what);
  assert.deepEqual(raw.of("suback").map((p) => p.granted), [[1]], what);
  assert.deepEqual(raw.of("puback").map((p) => p.messageId).sort(), [2, 3], what);
}

for (const transport of ["tcp", "ws"] as const) {
  Deno.test(`SUBSCRIBE, hello and a request pipelined in one ${transport} write are all answered`, async () => {
    const t = await startTestServer();
    try {
      await t.createEndpoint("dev1", PW);
      const url = transport === "tcp" ? t.tcpUrl : t.wsUrl;
      for (let round = 0; round < 5; round++) {
        const raw = await RawClient.open(url);
        try {
          await raw.send(connectPacket("dev1"));
          await raw.until(() => raw.of("connack").length === 1, "CONNACK");
          assert.equal(raw.of("connack")[0].reasonCode, 0);
          await raw.sendBytes(Buffer.concat(pipelinedHandshake("dev1").map((p) => encode(p))));
          await assertPipelinedAnswers(raw, `round ${round}`);
        } finally {
          await raw.close();
        }
      }
    } finally {
      await t.close();
    }
  });

  Deno.test(`CONNECT, SUBSCRIBE, hello and a request in one ${transport} write come online and are answered`, async () => {
    const t = await startTestServer();
    try {
      await t.createEndpoint("dev1", PW);
      const url = transport === "tcp" ? t.tcpUrl : t.wsUrl;
      for (let round = 0; round < 5; round++) {
        const raw = await RawClient.open(url);
        try {
          const packets = [connectPacket("dev1"), ...pipelinedHandshake("dev1")];
          await raw.sendBytes(Buffer.concat(packets.map((p) => encode(p))));
          await assertPipelinedAnswers(raw, `round ${round}`);
          assert.equal(raw.of("connack")[0].reasonCode, 0);
        } finally {
          await raw.close();
        }
      }
    } finally {
      await t.close();
    }
  });
}

Deno.test("a refused SUBSCRIBE or PUBLISH gets the obscured 0x80, not 0x87, and no reason string", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const raw = await RawClient.open(t.tcpUrl);
    try {
      await raw.send(connectPacket("dev1"));
      await raw.until(() => raw.of("connack").length === 1, "CONNACK");
      await raw.send({
        cmd: "subscribe",
        messageId: 1,
        subscriptions: [{ topic: "nix/c/dev2/down", qos: 1 }, { topic: "nix/c/dev1/down", qos: 1 }],
      });
      await raw.send(requestPacket("dev2", 2, { type: "self.get", rid: "x1" }));
      await raw.until(() => raw.of("suback").length + raw.of("puback").length === 2, "acks");
      assert.deepEqual(raw.of("suback").map((p) => p.granted), [[0x80, 1]]);
      const [puback] = raw.of("puback");
      assert.equal(puback.reasonCode, 0x80);
      assert.equal(puback.properties?.reasonString, undefined);
      assert.equal(raw.closed, false);
    } finally {
      await raw.close();
    }
  } finally {
    await t.close();
  }
});

for (const protocolVersion of [5, 4]) {
  Deno.test(`a QoS 1 PUBLISH with packet id 0 closes the MQTT ${protocolVersion} connection unanswered`, async () => {
    const t = await startTestServer();
    try {
      await t.createEndpoint("dev1", PW);
      const raw = await RawClient.open(t.tcpUrl, protocolVersion);
      try {
        await raw.send({ ...connectPacket("dev1"), protocolVersion }, protocolVersion);
        for (const p of pipelinedHandshake("dev1")) await raw.send(p, protocolVersion);
        await raw.until(() => framesOf(raw).length === 2, "hello and self.get answered");
        // [MQTT-2.2.1-3] QoS > 0 needs a non-zero packet identifier.
        await raw.send(requestPacket("dev1", 0, { type: "self.get", rid: "bad" }), protocolVersion);
        await raw.until(() => raw.closed, "close");
        assert.deepEqual(framesOf(raw).map((f) => f.rid), ["h1", "s1"], "no answer to id 0");
        assert.deepEqual(raw.of("puback").map((p) => p.messageId).sort(), [2, 3]);
        const reasons = raw.of("disconnect").map((p) => p.reasonCode);
        assert.deepEqual(reasons, protocolVersion === 5 ? [0x82] : []);
      } finally {
        await raw.close();
      }
    } finally {
      await t.close();
    }
  });
}

Deno.test("a password login whose connection closes before it is ready leaves no token grant behind", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const reader = t.reader;
    let onIssued!: () => void;
    const issued = new Promise<void>((r) => (onIssued = r));
    const off = t.server.store.onCommit(() => {
      const row = reader.prepare("SELECT session_hash FROM endpoints WHERE id = 'dev1'").get();
      if (row?.session_hash) onIssued();
    });
    // CONNECT and FIN in one go: the server sees the close while it is still hashing.
    const socket = net.connect(t.port, "127.0.0.1");
    socket.on("error", () => {});
    await once(socket, "connect");
    const closed = once(socket, "close");
    socket.end(encode(connectPacket("dev1")));
    await closed;
    await issued; // the login passed and committed a new token, so it made a grant
    off();
    // The login's last steps run in the same turn as the commit's answer; one more writer
    // round trip lets them finish.
    await t.server.store.run("settings.set", { key: "probe", value: "1" });
    assert.equal(t.server.mqtt.pendingLogins, 0);
    assert.equal(t.server.app.conns.size, 0, "no connection came online");
  } finally {
    await t.close();
  }
});
