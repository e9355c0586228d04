// Topic ACL over the real server (spec 5 OnACLCheck / OnPublish, spec 12): an endpoint subscribes
// only to its own down topic and publishes only to its own up topic, and nothing it publishes is
// ever routed to a subscriber.
import assert from "node:assert/strict";
import type { Frame, TestClient } from "./helpers/client.ts";
import { withServer } from "./helpers/messaging.ts";
import { aedesForTests } from "../server/broker/broker.ts";

/**
 * The MQTT 5 reason code of a refused topic in PUBACK and SUBACK: "Unspecified error", because
 * spec 5 (ObscureNotAuthorized) does not confirm "Not authorized" (0x87).
 */
const REFUSED = 0x80;

/**
 * A round trip on `c`'s own connection. Anything the server wrote to this connection before the
 * request was sent arrives before the `resp`, so afterwards the recorded frames are complete.
 */
async function barrier(c: TestClient): Promise<void> {
  assert.equal((await c.request({ type: "self.get" })).ok, true);
}

const rids = (c: TestClient) => c.frames.map((f: Frame) => f.rid);

Deno.test("publishing to another endpoint's up topic is refused with 0x80 and never processed as that endpoint's request", async () => {
  await withServer({}, async ({ t, endpoints, onlineAt }) => {
    await endpoints("a1", "b1");
    const a = await onlineAt(t.wsUrl, "a1");
    const b = await onlineAt(t.tcpUrl, "b1");
    for (const type of ["self.get", "self.logout"]) {
      const frame = JSON.stringify({ v: 1, type, rid: `spoof-${type}` });
      await assert.rejects(a.publishRaw(frame, "nix/c/b1/up"), { code: REFUSED });
    }
    // QoS 0 has no PUBACK to refuse with: the publish is dropped.
    const qos0 = JSON.stringify({ v: 1, type: "self.logout", rid: "spoof-qos0" });
    await a.mqtt.publishAsync("nix/c/b1/up", qos0, { qos: 0 });
    // a's round trip proves the server has handled a's publishes; then b's proves that nothing
    // of them was queued as b's request (b's requests are answered in order).
    await barrier(a);
    await barrier(b);
    assert.equal(b.connected, true, "b was not logged out by a's frame");
    assert.ok(!rids(b).some((r) => String(r).startsWith("spoof")), "b answered nothing of a's");
    assert.ok(!rids(a).some((r) => String(r).startsWith("spoof")), "a got no resp either");
    assert.equal(a.connected, true, "MQTT 5: a refused publish does not close the connection");
  });
});

Deno.test("publishing to any topic but the own up topic is refused, and a forged downlink reaches nobody", async () => {
  await withServer({}, async ({ t, endpoints, onlineAt }) => {
    await endpoints("a1", "b1");
    const a = await onlineAt(t.tcpUrl, "a1");
    const b = await onlineAt(t.wsUrl, "b1");
    const forged = JSON.stringify({ v: 1, type: "resp", rid: "forged", ok: true, data: {} });
    for (
      const topic of ["nix/c/b1/down", "nix/c/a1/down", "nix/c/a1", "x", "$SYS/x"]
    ) {
      await assert.rejects(a.publishRaw(forged, topic), { code: REFUSED }, topic);
    }
    // QoS 0 has no PUBACK to refuse with: the publish is dropped.
    await a.mqtt.publishAsync("nix/c/b1/down", forged, { qos: 0 });
    await barrier(a);
    await barrier(b);
    assert.ok(!rids(a).includes("forged"));
    assert.ok(!rids(b).includes("forged"));
    // A wildcard in a topic name is a malformed PUBLISH [MQTT-3.3.2-2]: the connection is closed.
    a.mqtt.publish("nix/c/+/down", forged, { qos: 1 });
    await a.until(() => a.closed, "the connection to close");
    await barrier(b);
    assert.ok(!rids(b).includes("forged"));
  });
});

Deno.test("an MQTT 3.1.1 client that publishes outside its up topic is disconnected", async () => {
  await withServer({}, async ({ t, endpoints, onlineAt }) => {
    await endpoints("old1", "b1");
    const b = await onlineAt(t.wsUrl, "b1");
    const old = await onlineAt(t.tcpUrl, "old1", { protocolVersion: 4, properties: undefined });
    old.mqtt.publish("nix/c/b1/down", JSON.stringify({ v: 1, type: "resp", rid: "forged" }), {
      qos: 1,
    });
    await old.until(() => old.closed, "the 3.1.1 client to be closed");
    await barrier(b);
    assert.ok(!rids(b).includes("forged"));
  });
});

Deno.test("subscribing to another endpoint's down topic, a wildcard or an up topic is refused in SUBACK, and no frame of the other endpoint arrives", async () => {
  await withServer({}, async ({ t, endpoints, onlineAt }) => {
    await endpoints("a1", "b1");
    const a = await onlineAt(t.wsUrl, "a1");
    const b = await onlineAt(t.tcpUrl, "b1");
    for (
      const topic of ["nix/c/b1/down", "nix/c/+/down", "nix/c/#", "#", "nix/c/a1/up", "nix/c/b1/up"]
    ) {
      // MQTT.js rejects a subscribe whose SUBACK carries a failure code; the packet is attached.
      const err = await a.mqtt.subscribeAsync(topic, { qos: 1 }).then(
        () => null,
        (e: { packet?: { granted?: number[] } }) => e,
      );
      assert.deepEqual(err?.packet?.granted, [REFUSED], `${topic}: SUBACK reason code`);
    }
    await barrier(b);
    await barrier(a);
    assert.deepEqual(
      a.frames.map((f) => f.rid),
      ["r1", "r2"],
      "only a's hello and barrier responses",
    );
    assert.equal(a.connected, true);
  });
});

Deno.test("a request published to the own up topic is answered but never forwarded to any subscriber", async () => {
  await withServer({}, async ({ t, endpoints, onlineAt }) => {
    // No client may subscribe to an up topic, so subscribe inside aedes itself, which sees every
    // route a publish could take (spec 5 CodeSuccessIgnore: the server only PUBACKs).
    const aedes = aedesForTests(t.server.broker);
    const routed: string[] = [];
    const listener = (packet: { topic: string }, cb: () => void) => {
      routed.push(packet.topic);
      cb();
    };
    await new Promise((resolve) => aedes.subscribe("nix/c/#", listener, resolve));
    try {
      await endpoints("a1", "b1");
      const tcp = await onlineAt(t.tcpUrl, "a1");
      const ws = await onlineAt(t.wsUrl, "b1");
      for (let i = 0; i < 5; i++) {
        assert.equal((await tcp.request({ type: "self.get" })).ok, true);
        assert.equal((await ws.request({ type: "self.get" })).ok, true);
      }
      assert.deepEqual(routed, [], "nothing published by a client is routed");
      for (const c of [tcp, ws]) {
        assert.deepEqual(c.frames.map((f) => f.type), Array(6).fill("resp"), "only responses");
        await c.close();
      }
    } finally {
      await new Promise((resolve) => aedes.unsubscribe("nix/c/#", listener, resolve));
    }
  });
});
