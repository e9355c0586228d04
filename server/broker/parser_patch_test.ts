import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqttPacket from "mqtt-packet";
import { parserSettings, patchParser } from "./parser_patch.ts";
import { patchBufferList } from "./buffer_list_patch.ts";

// deno-lint-ignore no-explicit-any
const codec = mqttPacket as any;

/** A CONNECT, then the packets a client sends after it (spec 4.4 and 6), as one byte stream. */
function session(protocolVersion: 4 | 5, bridge = false): Buffer {
  const v5 = protocolVersion === 5;
  const packets = [
    {
      cmd: "connect",
      protocolId: "MQTT",
      protocolVersion,
      ...(bridge ? { bridgeMode: true } : {}),
      clientId: "dev-ü-1",
      username: "dev-ü-1",
      password: Buffer.from("secret-password"),
      clean: true,
      keepalive: 60,
      ...(v5 ? { properties: { sessionExpiryInterval: 0, maximumPacketSize: 786432 } } : {}),
    },
    {
      cmd: "subscribe",
      messageId: 1,
      subscriptions: [{ topic: "nix/c/dev-ü-1/down", qos: 1, nl: false, rap: false, rh: 0 }],
    },
    {
      cmd: "publish",
      topic: "nix/c/dev-ü-1/up",
      payload: Buffer.from('{"v":1,"type":"hello","rid":"h"}'),
      qos: 1,
      messageId: 2,
      retain: false,
      dup: false,
      ...(v5 ? { properties: { payloadFormatIndicator: true } } : {}),
    },
    { cmd: "puback", messageId: 9, ...(v5 ? { reasonCode: 0 } : {}) },
    { cmd: "pingreq" },
    { cmd: "disconnect", ...(v5 ? { reasonCode: 0 } : {}) },
  ];
  return Buffer.concat(
    packets.map((p) => codec.generate(p, { protocolVersion, bridgeMode: bridge })),
  );
}

/** Feeds `bytes` to a fresh parser in chunks of `step` bytes; the packets as JSON, or errors. */
function parseInChunks(bytes: Buffer, step: number, patch: boolean) {
  const parser = codec.parser();
  if (patch) {
    patchParser(parser);
    patchBufferList(parser._list);
  }
  const seen: string[] = [];
  parser.on("packet", (p: unknown) => seen.push(JSON.stringify(p)));
  parser.on("error", (e: Error) => seen.push(`error: ${e.message}`));
  for (let i = 0; i < bytes.length; i += step) parser.parse(bytes.subarray(i, i + step));
  return { seen, parser };
}

// The prototype patch is for the whole process, so this one test takes mqtt-packet's own results
// first and then compares the patched parser with them.
Deno.test("a patched parser reads every packet as mqtt-packet does, with a plain list and lean settings", () => {
  const cases = [
    { v: 5 as const, bridge: false },
    { v: 4 as const, bridge: false },
    { v: 4 as const, bridge: true },
  ];
  const steps = [1, 3, 7, 64, 100_000];
  const expected = cases.map((c) =>
    steps.map((step) => parseInChunks(session(c.v, c.bridge), step, false).seen)
  );
  // A malformed stream: a PUBLISH with both QoS bits set after a valid CONNECT.
  const bad = Buffer.concat([session(5).subarray(0, 60), Buffer.from([0x36, 0x00])]);
  const expectedBad = parseInChunks(bad, 5, false).seen;

  for (const [i, c] of cases.entries()) {
    for (const [j, step] of steps.entries()) {
      const { seen, parser } = parseInChunks(session(c.v, c.bridge), step, true);
      assert.deepEqual(seen, expected[i][j], `v${c.v} bridge=${c.bridge} step ${step}`);
      assert.equal(seen.length, 6);
      assert.ok(!("_readableState" in parser._list), "the list is no stream");
      assert.equal(parser._list.length, 0);
      // Only what the parser reads later stays: never the password.
      assert.equal(parser.settings, parserSettings(c.v, c.bridge));
      assert.equal(JSON.stringify(parser.settings).includes("secret"), false);
    }
  }
  const { seen, parser } = parseInChunks(bad, 5, true);
  assert.deepEqual(seen, expectedBad);
  // After an error the next parse starts over on a fresh plain list (mqtt-packet `_resetState`).
  parser.parse(codec.generate({ cmd: "pingreq" }));
  assert.ok(!("_readableState" in parser._list));
  assert.equal(JSON.parse(seen.at(-1)!).cmd, "pingreq");
});

Deno.test("patchParser leaves anything else alone", () => {
  patchParser(null);
  patchParser({});
  patchParser({ _list: { length: 3 }, packet: {} });
  assert.ok(Object.isFrozen(parserSettings(5, false)));
  assert.equal(parserSettings(5, false), parserSettings(5, false));
  assert.notEqual(parserSettings(5, false), parserSettings(4, false));
});
