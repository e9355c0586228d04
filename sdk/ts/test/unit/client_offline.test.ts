import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";
import { NixMsgClient } from "../../src/client.ts";
import type { ConnectionEvent } from "../../src/types.ts";
import { Events } from "../helpers/events.ts";
import { code } from "../helpers/src_errors.ts";

/** A port with nothing listening: every connection attempt fails at once. */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test("before the handshake: requests fail with not_connected, sends queue, limits are the defaults", async () => {
  const port = await deadPort();
  const client = NixMsgClient.connect(`ws://127.0.0.1:${port}/mqtt`, "dev", {
    password: "pw-12345678",
  });
  const states = new Events<ConnectionEvent>();
  client.onConnection(states.push);
  try {
    await assert.rejects(client.getSelf(), code("not_connected"));
    await assert.rejects(client.recall("x"), code("not_connected"));
    await assert.rejects(
      client.send("b", "x".repeat(262_145)),
      code("body_too_large"),
    );
    await assert.rejects(
      client.send("b", "\u0001".repeat(262_144)),
      code("frame_too_large"),
    );
    await assert.rejects(
      client.send("b", "x", { sendAt: Date.now(), delay: 5 }),
      code("bad_request"),
    );
    const queued = client.send("b", "hello");
    const ev = await states.waitFor((e) => e.state === "reconnecting", "reconnecting");
    assert.ok(ev.retryInMs! >= 700 && ev.retryInMs! <= 1300, `first retry ${ev.retryInMs}`);
    assert.equal(client.state, "reconnecting");
    await client.close();
    await assert.rejects(queued, code("closed"));
    await assert.rejects(client.send("b", "late"), code("closed"));
    await assert.rejects(client.ready(), code("closed"));
    assert.equal(client.state, "offline");
    assert.equal(states.items[0]!.state, "connecting");
    assert.equal(states.items.at(-1)!.state, "offline");
  } finally {
    await client.close();
  }
});

test("reconnect delays grow 1 s, 2 s … while the server cannot be reached", async () => {
  const port = await deadPort();
  const client = NixMsgClient.connect(`ws://127.0.0.1:${port}/mqtt`, "dev", {
    password: "pw-12345678",
  });
  const states = new Events<ConnectionEvent>();
  client.onConnection(states.push);
  try {
    await states.waitCount(2, (e) => e.state === "reconnecting", "two retries", 5000);
    const [a, b] = states.items.filter((e) => e.state === "reconnecting").map((e) => e.retryInMs!);
    assert.ok(a! >= 700 && a! <= 1300, `first ${a}`);
    assert.ok(b! >= 1400 && b! <= 2600, `second ${b}`);
  } finally {
    await client.close();
  }
});

test("the queue capacity bounds sends while disconnected (queue_full)", async () => {
  const port = await deadPort();
  const client = NixMsgClient.connect(`ws://127.0.0.1:${port}/mqtt`, "dev", {
    password: "pw-12345678",
  }, {
    queueCapacity: 3,
  });
  try {
    const held = [client.send("b", "1"), client.send("b", "2"), client.send("b", "3")];
    for (const p of held) p.catch(() => {});
    await assert.rejects(client.send("b", "4"), code("queue_full"));
  } finally {
    await client.close();
  }
});

test("bad options are refused at once", () => {
  assert.throws(
    () =>
      NixMsgClient.connect("ws://127.0.0.1:1/mqtt", "d", { password: "p" }, {
        keepaliveSeconds: 5,
      }),
    code("bad_request"),
  );
  assert.throws(
    () =>
      NixMsgClient.connect("ws://127.0.0.1:1/mqtt", "d", { password: "p" }, {
        maxReceiveBytes: 10,
      }),
    code("bad_request"),
  );
});
