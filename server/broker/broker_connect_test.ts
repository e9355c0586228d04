import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import type { IConnackPacket, IDisconnectPacket } from "mqtt";
import { Buffer } from "node:buffer";
import {
  client,
  encode,
  end,
  event,
  PASSWORD,
  RawClient,
  received,
  startBroker,
} from "./_test_utils.ts";
import { MAX_PACKET_SIZE } from "./broker.ts";

const transports = ["tcp", "ws"] as const;

for (const transport of transports) {
  Deno.test(`an MQTT 5 client logs in over ${transport} and gets the spec 5 capabilities`, async () => {
    const t = await startBroker();
    const c = client(t.url(transport), "dev1", {
      keepalive: 30,
      properties: { maximumPacketSize: 100000, sessionExpiryInterval: 3600 },
    });
    try {
      const [connack] = await event<[IConnackPacket]>(c, "connect");
      assert.equal(connack.reasonCode, 0);
      assert.deepEqual(connack.properties, {
        sharedSubscriptionAvailable: false,
        maximumPacketSize: MAX_PACKET_SIZE,
        receiveMaximum: 1024,
        maximumQoS: 1,
        retainAvailable: false,
        wildcardSubscriptionAvailable: false,
        sessionExpiryInterval: 0, // clamped: no persistent sessions (spec 5)
      });
      await t.log.until(() => t.log.connected.length === 1, "connected");
      const info = t.log.connected[0];
      assert.equal(info.connCode.length, 16);
      assert.match(info.connCode, /^[0-9a-f]{16}$/);
      assert.deepEqual({ ...info, connCode: "" }, {
        connCode: "",
        clientId: "dev1",
        username: "dev1",
        password: PASSWORD,
        protocolVersion: 5,
        keepAlive: 30,
        maxPacketSize: 100000,
        transport,
        remoteAddress: "127.0.0.1",
        secure: false,
      });
      assert.equal(t.broker.clientCount(), 1);
      assert.equal(t.broker.clientCount(transport), 1);
      assert.equal(t.broker.clientCount(transport === "tcp" ? "ws" : "tcp"), 0);

      await end(c);
      await t.log.until(() => t.log.disconnected.length === 1, "disconnected");
      assert.deepEqual(t.log.disconnected, [{ connCode: info.connCode, clientId: "dev1" }]);
      assert.equal(t.broker.clientCount(), 0);
    } finally {
      await end(c);
      await t.close();
    }
  });

  Deno.test(`an MQTT 3.1.1 client logs in over ${transport}`, async () => {
    const t = await startBroker();
    const c = client(t.url(transport), "dev1", { protocolVersion: 4 });
    try {
      const [connack] = await event<[IConnackPacket]>(c, "connect");
      assert.equal(connack.returnCode, 0);
      await t.log.until(() => t.log.connected.length === 1, "connected");
      assert.equal(t.log.connected[0].protocolVersion, 4);
      assert.equal(t.log.connected[0].maxPacketSize, null);
    } finally {
      await end(c);
      await t.close();
    }
  });

  Deno.test(`bad credentials get CONNACK 0x86 (MQTT 5) and 4 (3.1.1) over ${transport}`, async () => {
    const t = await startBroker();
    const cases = [
      { version: 5 as const, id: "dev1", user: "dev1", password: "wrong", code: 0x86 },
      { version: 4 as const, id: "dev1", user: "dev1", password: "wrong", code: 4 },
      // Spec 5: ClientID must equal Username; the hook is not even asked.
      { version: 5 as const, id: "dev1", user: "dev2", password: PASSWORD, code: 0x86 },
      { version: 4 as const, id: "", user: "", password: PASSWORD, code: 4 },
    ];
    try {
      for (const k of cases) {
        const c = client(t.url(transport), k.id, {
          protocolVersion: k.version,
          username: k.user,
          password: k.password,
          clean: true,
        });
        try {
          const [err] = await event<[{ code: number }]>(c, "error");
          assert.equal(err.code, k.code, JSON.stringify(k));
        } finally {
          await end(c);
        }
      }
      assert.equal(t.log.authenticated.length, 2);
      assert.equal(t.log.connected.length, 0);
    } finally {
      await t.close();
    }
  });

  Deno.test(`an authenticate error closes the ${transport} connection without CONNACK`, async () => {
    const t = await startBroker();
    let calls = 0;
    t.log.auth = () => {
      calls++;
      // Spec 5: a database error must not look like bad credentials.
      return calls === 1 ? Promise.resolve({ ok: false, reason: "error" }) : Promise.reject(
        new Error("database is locked"),
      );
    };
    try {
      for (const version of [5, 4] as const) {
        const c = client(t.url(transport), "dev1", { protocolVersion: version });
        const cmds = received(c);
        try {
          await event(c, "close");
          assert.deepEqual(cmds, [], `MQTT ${version} saw packets`);
          assert.equal(c.connected, false);
        } finally {
          await end(c);
        }
      }
      assert.equal(calls, 2);
      assert.equal(t.log.connected.length, 0);
      assert.equal(t.log.disconnected.length, 0);
    } finally {
      await t.close();
    }
  });
}

Deno.test("keepalive out of 10–600 is clamped and announced as Server Keep Alive", async () => {
  const t = await startBroker();
  try {
    for (const [asked, enforced] of [[5, 10], [1000, 600], [0, 600], [30, undefined]]) {
      const c = client(t.url("tcp"), `k${asked}`, { keepalive: asked });
      try {
        const [connack] = await event<[IConnackPacket]>(c, "connect");
        assert.equal(connack.properties?.serverKeepAlive, enforced, `keepalive ${asked}`);
        await t.log.until(() => t.log.connected.some((i) => i.clientId === `k${asked}`));
        const info = t.log.connected.find((i) => i.clientId === `k${asked}`);
        assert.equal(info?.keepAlive, enforced ?? asked);
      } finally {
        await end(c);
      }
    }
  } finally {
    await t.close();
  }
});

Deno.test("over maxClients MQTT 5 gets 0x89 and 3.1.1 gets 3, but a takeover is let in", async () => {
  const t = await startBroker({ maxClients: 1 });
  const first = client(t.url("tcp"), "dev1");
  try {
    await event(first, "connect");
    for (const [version, code] of [[5, 0x89], [4, 3]] as const) {
      const c = client(t.url("ws"), "dev2", { protocolVersion: version });
      try {
        const [err] = await event<[{ code: number }]>(c, "error");
        assert.equal(err.code, code);
      } finally {
        await end(c);
      }
    }
    // The hook is not asked for clients that could not be let in.
    assert.deepEqual(t.log.authenticated.map((i) => i.clientId), ["dev1"]);
    const again = client(t.url("ws"), "dev1");
    try {
      await event(again, "connect");
      assert.equal(t.log.authenticated.length, 2);
    } finally {
      await end(again);
    }
  } finally {
    await end(first);
    await t.close();
  }
});

for (const transport of transports) {
  Deno.test(`a second ${transport} login with the same ClientID takes over with 0x8E`, async () => {
    const t = await startBroker();
    const old = client(t.url("tcp"), "dev1");
    let next = old;
    try {
      await event(old, "connect");
      await t.log.until(() => t.log.connected.length === 1);
      const oldCode = t.log.connected[0].connCode;
      const kicked = event<[IDisconnectPacket]>(old, "disconnect");
      next = client(t.url(transport), "dev1");
      await event(next, "connect");
      const [packet] = await kicked;
      assert.equal(packet.reasonCode, 0x8e);
      await t.log.until(() => t.log.connected.length === 2 && t.log.disconnected.length === 1);
      const newCode = t.log.connected[1].connCode;
      assert.notEqual(newCode, oldCode);
      assert.deepEqual(t.log.disconnected, [{ connCode: oldCode, clientId: "dev1" }]);
      assert.equal(t.broker.clientCount(), 1);
      // Downlinks go to the new connection only.
      assert.equal(await t.broker.publish(oldCode, new Uint8Array([1]), 1), "dropped");
      const got = event(next, "message");
      assert.equal(await t.broker.publish(newCode, new Uint8Array([2]), 1), "acked");
      assert.equal((await got)[0], "nix/c/dev1/down");

      await end(next);
      await t.log.until(() => t.log.disconnected.length === 2);
      assert.equal(t.log.disconnectsOf(oldCode), 1);
      assert.equal(t.log.disconnectsOf(newCode), 1);
    } finally {
      await end(old, next);
      await t.close();
    }
  });
}

Deno.test("a TCP socket handed over after sniffing (first chunk unshifted) is served", async () => {
  const t = await startBroker();
  // As the listener does it (DESIGN pitfall 5): read the first chunk, put it back, hand over.
  const sniffer = net.createServer((socket) => {
    socket.once("data", (chunk) => {
      socket.pause();
      socket.unshift(chunk);
      t.broker.handle({
        transport: "tcp",
        stream: socket,
        remoteAddress: "127.0.0.1",
        secure: false,
      });
    });
  });
  sniffer.listen(0, "127.0.0.1");
  await once(sniffer, "listening");
  const c = client(`mqtt://127.0.0.1:${(sniffer.address() as net.AddressInfo).port}`, "dev1");
  try {
    await event(c, "connect");
    await c.publishAsync("nix/c/dev1/up", "after sniffing", { qos: 1 });
    assert.deepEqual(t.log.messages.map((m) => m.text), ["after sniffing"]);
  } finally {
    await end(c);
    await t.close();
    await new Promise((r) => sniffer.close(r));
  }
});

Deno.test("a login that never becomes connected fires abandoned once, after authenticate settled", async () => {
  const t = await startBroker();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  t.log.auth = async (info) => {
    if (info.clientId === "slow") await held;
    return info.password === PASSWORD ? { ok: true } : { ok: false, reason: "bad_credentials" };
  };
  try {
    // Refused: abandoned once the connection has closed.
    const bad = client(t.url("tcp"), "dev1", { password: "wrong" });
    await event(bad, "error");
    await end(bad);
    await t.log.until(() => t.log.abandoned.length === 1, "abandoned after a refusal");

    // Gone while authenticate runs (CONNECT and FIN in one go): abandoned only after the hook
    // has settled.
    const socket = net.connect(Number(new URL(t.url("tcp")).port), "127.0.0.1");
    socket.on("error", () => {});
    await once(socket, "connect");
    const closed = once(socket, "close");
    socket.end(encode({
      cmd: "connect",
      protocolVersion: 5,
      clientId: "slow",
      username: "slow",
      password: PASSWORD,
    }));
    await closed;
    await t.log.until(() => t.log.authenticated.some((i) => i.clientId === "slow"));
    assert.equal(t.log.abandoned.length, 1, "not before authenticate settled");
    release();
    await t.log.until(() => t.log.abandoned.length === 2, "abandoned after the slow login");
    const slowCode = t.log.authenticated.find((i) => i.clientId === "slow")!.connCode;
    assert.equal(t.log.abandoned[1], slowCode);
    assert.equal(t.log.connected.length, 0);
    assert.equal(t.log.disconnected.length, 0);
  } finally {
    await t.close();
  }
});

for (const transport of transports) {
  Deno.test(`over ${transport} a silent client is closed 1.5 keep-alives after its last packet, and packets keep it open [MQTT-3.1.2-24]`, async () => {
    const t = await startBroker({ keepAliveMin: 1 });
    const quiet = await RawClient.open(t.url(transport));
    const talker = await RawClient.open(t.url(transport));
    try {
      const connect = (id: string) => ({
        cmd: "connect",
        protocolId: "MQTT",
        protocolVersion: 5,
        clientId: id,
        username: id,
        password: Buffer.from(PASSWORD),
        clean: true,
        keepalive: 1,
      });
      const t0 = performance.now();
      await quiet.send(connect("quiet"));
      await talker.send(connect("talker"));
      await quiet.until(() => quiet.of("connack").length === 1, "quiet connack");
      await talker.until(() => talker.of("connack").length === 1, "talker connack");
      // The talker pings every 400 ms for 3 s: twice the 1.5 s deadline, never closed.
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 400));
        await talker.send({ cmd: "pingreq" });
      }
      await quiet.until(() => quiet.closed, "the quiet client closed");
      const quietMs = performance.now() - t0;
      assert.ok(quietMs >= 1500, `closed after ${quietMs.toFixed(0)} ms, not before 1.5 s`);
      assert.equal(talker.closed, false, "the talker is still open after 3.2 s");
      assert.ok(talker.of("pingresp").length >= 7);
      // Then silent: it is closed 1.5 s after its last PINGREQ.
      const lastPing = performance.now();
      await talker.until(() => talker.closed, "the talker closed once silent");
      const talkerMs = performance.now() - lastPing;
      assert.ok(talkerMs >= 1400 && talkerMs < 4000, `closed ${talkerMs.toFixed(0)} ms after`);
      await t.log.until(() => t.log.disconnected.length === 2, "both disconnected");
    } finally {
      await quiet.close();
      await talker.close();
      await t.close();
    }
  });
}
