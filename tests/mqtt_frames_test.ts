// The frame layer over the real server (spec 6, 6.1, 6.10): the handshake gate, the request rate,
// response size limits, malformed frames, and a fuzzing run that must not hurt the server.
import assert from "node:assert/strict";
import { type Frame, online, TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";
import {
  BAD_PAYLOADS,
  encodeWire,
  GOOD_REQUESTS,
  seededRandom,
} from "../server/protocol/fixtures.ts";
import { REQUEST_TYPES } from "../server/protocol/mod.ts";

const PW = "device-password-1";
const encoder = new TextEncoder();

const codeOf = (f: Frame) => (f.error as { code?: string } | undefined)?.code;
const sizeOf = (f: Frame) => encoder.encode(JSON.stringify(f)).length;

/** Publishes `payload` and resolves with the next `resp` this client receives. */
async function nextResp(c: TestClient, payload: string | Uint8Array): Promise<Frame> {
  const seen = c.frames.length;
  await c.publishRaw(payload);
  await c.until(() => c.frames.length > seen, "the next resp");
  return c.frames[seen];
}

/** Connects with the password, subscribes, and does not say hello. */
async function subscribedOnly(url: string, id: string): Promise<TestClient> {
  const c = await TestClient.connect(url, id, PW);
  assert.equal(c.connack?.reasonCode, 0);
  await c.subscribe();
  return c;
}

Deno.test("every request type before hello answers not_ready, and the same connection then handshakes", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const c = await subscribedOnly(t.wsUrl, "dev1");
    const types = new Set<string>();
    for (const fixture of Object.values(GOOD_REQUESTS)) {
      const type = fixture.wire.type as string;
      if (type === "hello" || types.has(type)) continue;
      types.add(type);
      const resp = await c.request({ ...fixture.wire, rid: `nr-${type}` });
      assert.equal(resp.ok, false, type);
      assert.equal(codeOf(resp), "not_ready", type);
    }
    assert.ok(types.size >= 20, `covered ${types.size} request types`);
    await c.handshake();
    assert.equal((await c.request({ type: "self.get" })).ok, true);
    await c.close();
  } finally {
    await t.close();
  }
});

Deno.test("a hello before the down subscription closes the connection without an answer", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    for (const url of [t.wsUrl, t.tcpUrl]) {
      const c = await TestClient.connect(url, "dev1", PW);
      // Not awaited: the server may close before it sends the PUBACK.
      c.mqtt.publish(
        c.downTopic.replace("/down", "/up"),
        JSON.stringify({
          v: 1,
          type: "hello",
          rid: "h1",
        }),
        { qos: 1 },
      );
      await c.until(() => c.closed, "the server to close the connection");
      assert.deepEqual(c.frames, []);
      await c.close();
    }
  } finally {
    await t.close();
  }
});

Deno.test("a connection without hello within timeouts.hello_seconds is disconnected, while a handshaken one stays", async () => {
  const t = await startTestServer({ timeouts: { hello_seconds: 0.5 } });
  try {
    await t.createEndpoint("dev1", PW);
    await t.createEndpoint("dev2", PW);
    const since = performance.now(); // the server's timer starts later, at the CONNECT
    const quiet = await subscribedOnly(t.tcpUrl, "dev1");
    const polite = (await online(t.wsUrl, "dev2", PW)).client;
    await quiet.until(() => quiet.closed, "the hello timeout", 5000);
    const waited = performance.now() - since;
    assert.ok(waited >= 450, `closed after ${waited.toFixed(0)} ms, not before the timeout`);
    assert.equal(polite.connected, true);
    assert.equal((await polite.request({ type: "self.get" })).ok, true);
    await quiet.close();
    await polite.close();
  } finally {
    await t.close();
  }
});

Deno.test("requests beyond the burst answer rate_limited, ack and receipt_ack are never limited, and the bucket refills with time", async () => {
  // A clock that only moves when the test moves it makes the bucket arithmetic exact.
  let now = Date.now();
  const t = await startTestServer({ limits: { requests_per_second: 5 } }, { clock: () => now });
  try {
    await t.createEndpoint("dev1", PW);
    const c = (await online(t.wsUrl, "dev1", PW)).client; // hello took 1 of the 10 tokens
    const burst = await Promise.all(
      Array.from({ length: 30 }, () => c.request({ type: "self.get" })),
    );
    assert.equal(burst.filter((r) => r.ok === true).length, 9, "burst 2 x 5 minus the hello");
    assert.equal(burst.filter((r) => codeOf(r) === "rate_limited").length, 21);
    // Answered in order: the 9 successes come first.
    assert.deepEqual(burst.map((r) => r.ok), [...Array(9).fill(true), ...Array(21).fill(false)]);

    for (let i = 0; i < 15; i++) {
      const ack = await c.request({ type: "ack", from: "someone", id: `m${i}` });
      assert.notEqual(codeOf(ack), "rate_limited", "ack is not limited");
      const receipt = await c.request({ type: "receipt_ack", receipt_id: `${i + 1}` });
      assert.notEqual(codeOf(receipt), "rate_limited", "receipt_ack is not limited");
    }
    assert.equal(codeOf(await c.request({ type: "self.get" })), "rate_limited", "still empty");

    now += 1000; // 5 tokens
    const refill = await Promise.all(
      Array.from({ length: 6 }, () => c.request({ type: "self.get" })),
    );
    assert.deepEqual(refill.map((r) => r.ok), [true, true, true, true, true, false]);
    assert.equal(c.connected, true, "rate limiting never closes the connection");
    await c.close();
  } finally {
    await t.close();
  }
});

Deno.test("a response larger than the connection accepts answers response_too_large and the connection stays usable", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    // Measure the responses on an unlimited connection first.
    const first = await online(t.tcpUrl, "dev1", PW);
    await first.client.close();
    const probe = await TestClient.connect(t.tcpUrl, "dev1", first.token!);
    const helloSize = sizeOf(await probe.handshake());
    const name = "😀".repeat(64); // the longest name: 256 bytes
    assert.equal((await probe.request({ type: "self.update", name })).ok, true);
    const getSize = sizeOf(await probe.request({ type: "self.get" }));
    await probe.close();
    assert.ok(getSize > helloSize + 64, `self.get ${getSize} B vs hello ${helloSize} B`);

    // No response of this issue reaches the 1 KiB minimum of max_receive_bytes (spec 6.1), so
    // the limit comes from the CONNECT Maximum Packet Size instead: the server allows that
    // minus 128 bytes of packet overhead (spec 7.5), which here fits hello but not self.get.
    const limit = helloSize + 32;
    const c = await TestClient.connect(t.wsUrl, "dev1", first.token!, {
      properties: { sessionExpiryInterval: 0, maximumPacketSize: limit + 128 },
    });
    assert.equal(c.connack?.reasonCode, 0);
    await c.handshake(1024);
    const tooLarge = await c.request({ type: "self.get", rid: "big" });
    assert.equal(tooLarge.rid, "big");
    assert.equal(tooLarge.ok, false);
    assert.equal(codeOf(tooLarge), "response_too_large");
    assert.ok(sizeOf(tooLarge) <= limit);

    assert.equal((await c.request({ type: "self.update", name: "门口" })).ok, true);
    const small = await c.request({ type: "self.get" });
    assert.equal(small.ok, true, "a smaller response gets through on the same connection");
    assert.equal((small.data as { name: string }).name, "门口");
    assert.equal(c.connected, true);
    await c.close();
  } finally {
    await t.close();
  }
});

Deno.test("malformed JSON, a wrong v, an unknown type and other bad payloads answer bad_request", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const c = (await online(t.tcpUrl, "dev1", PW)).client;
    for (const [name, fixture] of Object.entries(BAD_PAYLOADS)) {
      const resp = await nextResp(c, fixture.payload);
      assert.equal(resp.type, "resp", name);
      assert.equal(resp.ok, false, name);
      assert.equal(codeOf(resp), "bad_request", name);
      // Without a readable rid the server answers with rid "" (server/app/mqtt_app.ts).
      assert.equal(resp.rid, fixture.rid ?? "", name);
    }
    for (
      const [name, wire] of Object.entries({
        receiveBelowMinimum: { v: 1, type: "hello", rid: "h", max_receive_bytes: 1023 },
        nameTooLong: { v: 1, type: "self.update", rid: "u", name: "n".repeat(65) },
      })
    ) {
      const resp = await nextResp(c, encodeWire(wire));
      assert.equal(codeOf(resp), "bad_request", name);
      assert.equal(resp.rid, wire.rid, name);
    }
    assert.equal(c.connected, true, "bad frames never close the connection");
    assert.equal((await c.request({ type: "self.get" })).ok, true);
    await c.close();
  } finally {
    await t.close();
  }
});

/** A random JSON value, nested at most `depth` deep. */
function randomValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 0 ? 8 : 6));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return Math.floor((rand() - 0.5) * 2 ** (rand() * 60));
    case 3:
      return rand() * 1e6;
    case 4:
      return randomString(rand, Math.floor(rand() * 40));
    case 5:
      return randomString(rand, Math.floor(rand() * 3000));
    case 6:
      return Array.from({ length: Math.floor(rand() * 5) }, () => randomValue(rand, depth - 1));
    default:
      return randomObject(rand, depth - 1, Math.floor(rand() * 6));
  }
}

const KEYS = ["v", "type", "rid", "id", "to", "body", "name", "ids", "cursor", "limit", "from"];

function randomString(rand: () => number, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += String.fromCodePoint(Math.floor(rand() ** 4 * 0x2ffff));
  return s;
}

function randomObject(rand: () => number, depth: number, n: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const key = rand() < 0.7 ? KEYS[Math.floor(rand() * KEYS.length)] : randomString(rand, 6);
    o[key] = randomValue(rand, depth);
  }
  return o;
}

// self.logout would end the run early (the server answers and disconnects), so it is left out.
const FUZZ_TYPES = REQUEST_TYPES.filter((type) => type !== "self.logout");

/** Frame `i` of the fuzzing run: random bytes, random JSON, or a known type with random fields. */
function fuzzFrame(rand: () => number, i: number): Uint8Array {
  const kind = rand();
  if (kind < 0.3) {
    return Uint8Array.from({ length: Math.floor(rand() * 600) }, () => Math.floor(rand() * 256));
  }
  if (kind < 0.5) return encodeWire(randomValue(rand, 3));
  const frame = randomObject(rand, 2, Math.floor(rand() * 5));
  frame.v = rand() < 0.9 ? 1 : randomValue(rand, 0);
  frame.type = FUZZ_TYPES[Math.floor(rand() * FUZZ_TYPES.length)];
  frame.rid = rand() < 0.9 ? `f${i}` : randomValue(rand, 0);
  return encodeWire(frame);
}

/** Publishes at QoS 1; settles on the PUBACK, a refusal, or the connection closing. */
function publishOrClose(c: TestClient, payload: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (c.closed) return resolve();
    const done = () => {
      c.mqtt.off("close", done);
      resolve();
    };
    c.mqtt.once("close", done);
    c.mqtt.publish(`nix/c/${c.id}/up`, payload as unknown as string, { qos: 1 }, done);
  });
}

Deno.test("the server survives 1,000 random frames from one connection and keeps serving", async () => {
  const t = await startTestServer({ limits: { requests_per_second: 100_000 } });
  try {
    await t.createEndpoint("fuzz1", PW);
    await t.createEndpoint("dev1", PW);
    const c = (await online(t.wsUrl, "fuzz1", PW)).client;
    const rand = seededRandom(20261129);
    let sent = 0;
    for (; sent < 1000 && c.connected; sent++) {
      await publishOrClose(c, fuzzFrame(rand, sent));
    }
    if (c.connected) {
      // Requests are handled in order, so this answer comes after every fuzz frame's.
      assert.equal((await c.request({ type: "self.get", rid: "after" })).ok, true);
      assert.equal(sent, 1000);
      // Every frame, however broken, got exactly one answer (plus hello's and this one's).
      assert.equal(c.frames.filter((f) => f.type === "resp").length, 1002);
    }
    await c.close();
    const fresh = await online(t.tcpUrl, "dev1", PW);
    const self = await fresh.client.request({ type: "self.get" });
    assert.equal((self.data as { id: string }).id, "dev1");
    await fresh.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("a hello answer too large for the connection does not complete the handshake", async () => {
  const t = await startTestServer();
  try {
    await t.createEndpoint("dev1", PW);
    const c = await TestClient.connect(t.wsUrl, "dev1", PW, {
      // 128 bytes of packet overhead (spec 7.5) leave 220: room for an error answer, not for the
      // hello answer with its session token.
      properties: { sessionExpiryInterval: 0, maximumPacketSize: 128 + 220 },
    });
    assert.equal(c.connack?.reasonCode, 0);
    await c.subscribe();
    const hello = await c.request({ type: "hello", rid: "h" });
    assert.equal(codeOf(hello), "response_too_large");
    const after = await c.request({ type: "self.get", rid: "g" });
    assert.equal(codeOf(after), "not_ready", "the connection must not count as handshaken");
    await c.close();
  } finally {
    await t.close();
  }
});
