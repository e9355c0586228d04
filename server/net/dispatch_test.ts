import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import type { Duplex } from "node:stream";
import { connect as tlsConnect, createSecureContext } from "node:tls";
import { type ConnFacts, dispatchConnection, type DispatchSettings } from "./dispatch.ts";
import { PROXY_V2_SIGNATURE } from "./proxy_protocol.ts";
import { patchRead } from "../broker/read_patch.ts";
import { closeOf, connectTcp, HAS_OPENSSL, makeCert, memoryLog } from "./_test_util.ts";
import type { MqttConn } from "./types.ts";

interface Harness {
  readonly port: number;
  /** Every connection handed to onMqtt. */
  readonly conns: MqttConn[];
  /** The first connection handed to onMqtt. */
  readonly firstConn: Promise<MqttConn>;
}

/** A net server on port 0 whose connections go through dispatchConnection. */
async function withDispatch(
  overrides: Partial<DispatchSettings>,
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const conns: MqttConn[] = [];
  const first = Promise.withResolvers<MqttConn>();
  const open = new Set<Duplex>();
  const http = createHttpServer((_req, res) => res.end("hello"));
  const settings: DispatchSettings = {
    firstByteMs: 2000,
    tls: null,
    http,
    admitHttp: () => true,
    onMqtt: (c) => {
      conns.push(c);
      first.resolve(c);
    },
    facts: new WeakMap<Duplex, ConnFacts>(),
    track: (s) => {
      open.add(s);
      s.once("close", () => open.delete(s));
    },
    maxQueuedBytes: 8 << 20,
    isTrustedProxy: () => false,
    takeClientSlot: () => () => {},
    log: memoryLog().log,
    ...overrides,
  };
  const server = createServer((s) => void dispatchConnection(s, settings));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    await body({ port: (server.address() as AddressInfo).port, conns, firstConn: first.promise });
  } finally {
    for (const s of open) s.destroy();
    await new Promise((r) => server.close(r));
  }
}

function readBytes(stream: Duplex, n: number): Promise<number[]> {
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    stream.on("data", (c: Buffer) => {
      chunks.push(c);
      const all = Buffer.concat(chunks);
      if (all.length >= n) resolve([...all.subarray(0, n)]);
    });
    stream.resume();
  });
}

Deno.test("a raw 0x10 first byte is handed to onMqtt with nothing consumed", async () => {
  await withDispatch({}, async ({ port, firstConn }) => {
    const client = await connectTcp(port);
    client.write(Buffer.from([0x10, 0x0c, 0x00]));
    const conn = await firstConn;
    assert.equal(conn.transport, "tcp");
    assert.equal(conn.remoteAddress, "127.0.0.1");
    assert.equal(conn.secure, false);
    if (conn.transport !== "tcp") return;
    const bytes = readBytes(conn.stream, 5);
    client.write(Buffer.from([0x04, 0x4d]));
    assert.deepEqual(await bytes, [0x10, 0x0c, 0x00, 0x04, 0x4d]);
    client.destroy();
  });
});

Deno.test("a raw 0x10 first byte is closed where MQTT is not served (admin_listen)", async () => {
  await withDispatch({ onMqtt: null }, async ({ port, conns }) => {
    const client = await connectTcp(port);
    const gone = closeOf(client);
    client.write(Buffer.from([0x10, 0x0c]));
    assert.equal((await gone).length, 0);
    assert.equal(conns.length, 0);
  });
});

Deno.test("garbage first bytes are closed (spec 4.2)", async () => {
  await withDispatch({}, async ({ port, conns }) => {
    for (const first of [0x00, 0x61, /* a */ 0x30, /* MQTT PUBLISH */ 0xff]) {
      const client = await connectTcp(port);
      const gone = closeOf(client);
      client.write(Buffer.from([first, 0x01, 0x02]));
      assert.equal((await gone).length, 0, `first byte ${first}`);
    }
    assert.equal(conns.length, 0);
  });
});

Deno.test("a connection that sends nothing is closed after the first-byte timeout", async () => {
  await withDispatch({ firstByteMs: 150 }, async ({ port, conns }) => {
    const started = Date.now();
    const client = await connectTcp(port);
    await closeOf(client);
    const waited = Date.now() - started;
    assert.ok(waited >= 140, `closed after ${waited} ms, before the timeout`);
    assert.equal(conns.length, 0);
  });
});

Deno.test("an HTTP first byte is handed to the HTTP server", async () => {
  await withDispatch({}, async ({ port }) => {
    const client = await connectTcp(port);
    const reply = closeOf(client);
    client.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const text = (await reply).toString();
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /hello$/);
  });
});

Deno.test("a TLS ClientHello is closed when no certificate is configured", async () => {
  await withDispatch({ tls: null }, async ({ port, conns }) => {
    const client = await connectTcp(port);
    const gone = closeOf(client);
    client.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05]));
    assert.equal((await gone).length, 0);
    assert.equal(conns.length, 0);
  });
});

/** `PROXY TCP4` v2 header naming 192.0.2.7:51000 -> 127.0.0.1:1883. */
const PROXY_V2_192_0_2_7 = Buffer.concat([
  Buffer.from(PROXY_V2_SIGNATURE),
  Buffer.from([0x21, 0x11, 0x00, 0x0c, 192, 0, 2, 7, 127, 0, 0, 1, 0xc7, 0x38, 0x07, 0x5b]),
]);

const trustLoopback = { isTrustedProxy: (ip: string) => ip === "127.0.0.1" };

Deno.test("a trusted proxy's PROXY v2 header names the MQTT client; the rest is intact", async () => {
  const slots: string[] = [];
  const takeClientSlot = (ip: string) => {
    slots.push(ip);
    return () => {};
  };
  await withDispatch({ ...trustLoopback, takeClientSlot }, async ({ port, firstConn }) => {
    const client = await connectTcp(port);
    // The header and the first MQTT bytes in separate writes, then in one.
    client.write(PROXY_V2_192_0_2_7.subarray(0, 7));
    client.write(PROXY_V2_192_0_2_7.subarray(7));
    client.write(Buffer.from([0x10, 0x0c, 0x00]));
    const conn = await firstConn;
    assert.equal(conn.remoteAddress, "192.0.2.7");
    assert.deepEqual(slots, ["192.0.2.7"]);
    if (conn.transport !== "tcp") return;
    assert.deepEqual(await readBytes(conn.stream, 3), [0x10, 0x0c, 0x00]);
    client.destroy();
  });
});

/**
 * Reads `stream` the way aedes does (`readable`, then `read()` until null, DESIGN pitfall 4) and
 * resolves with the first `n` bytes, or with what came within `ms`.
 */
function readLikeAedes(stream: Duplex, n: number, ms: number): Promise<number[]> {
  patchRead(stream);
  const got: number[] = [];
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(got), ms);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = stream.read()) !== null) got.push(...chunk);
      if (got.length >= n) {
        clearTimeout(timer);
        stream.off("readable", onReadable);
        resolve(got.slice(0, n));
      }
    };
    stream.on("readable", onReadable);
  });
}

for (const joined of [true, false]) {
  Deno.test(`MQTT after a PROXY v2 header ${joined ? "in the same write" : "written apart"}: later packets are read too`, async () => {
    // issue 30: HAProxy often sends its header and the client's CONNECT in one segment; then the
    // broker got the CONNECT and never read again (Deno's socket pause stopped the reads).
    await withDispatch(trustLoopback, async ({ port, firstConn }) => {
      const client = await connectTcp(port);
      const connect = [0x10, 0x0c, 0x00];
      if (joined) client.write(Buffer.concat([PROXY_V2_192_0_2_7, Buffer.from(connect)]));
      else {
        client.write(PROXY_V2_192_0_2_7);
        await new Promise((r) => setTimeout(r, 20));
        client.write(Buffer.from(connect));
      }
      const conn = await firstConn;
      if (conn.transport !== "tcp") throw new Error("not TCP");
      const read = readLikeAedes(conn.stream, 6, 3000);
      // The SUBSCRIBE after the CONNACK, a moment later.
      await new Promise((r) => setTimeout(r, 50));
      client.write(Buffer.from([0x82, 0x01, 0x00]));
      assert.deepEqual(await read, [...connect, 0x82, 0x01, 0x00]);
      client.destroy();
    });
  });
}

Deno.test("a trusted proxy's PROXY v1 line names the HTTP client", async () => {
  const facts = new WeakMap<Duplex, ConnFacts>();
  const seen: string[] = [];
  const http = createHttpServer((req, res) => {
    seen.push(facts.get(req.socket)?.remoteAddress ?? "none");
    res.end("hello");
  });
  await withDispatch({ ...trustLoopback, facts, http }, async ({ port }) => {
    const client = await connectTcp(port);
    const reply = closeOf(client);
    client.write(
      "PROXY TCP4 198.51.100.9 127.0.0.1 40000 80\r\n" +
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert.match((await reply).toString(), /^HTTP\/1\.1 200 /);
    assert.deepEqual(seen, ["198.51.100.9"]);
  });
});

Deno.test("a PROXY header from a peer outside trusted_proxies is closed", async () => {
  await withDispatch({}, async ({ port, conns }) => {
    for (const header of [PROXY_V2_192_0_2_7, Buffer.from("PROXY TCP4 1.2.3.4 1.2.3.5 1 2\r\n")]) {
      const client = await connectTcp(port);
      const gone = closeOf(client);
      client.write(Buffer.concat([header, Buffer.from([0x10, 0x0c, 0x00])]));
      assert.equal((await gone).length, 0);
    }
    assert.equal(conns.length, 0);
  });
});

Deno.test("a trusted proxy's slow, malformed or over-cap PROXY header closes the connection", async () => {
  await withDispatch(
    { ...trustLoopback, firstByteMs: 150, takeClientSlot: () => null },
    async ({ port, conns }) => {
      const started = Date.now();
      const slow = await connectTcp(port);
      const slowGone = closeOf(slow);
      slow.write(PROXY_V2_192_0_2_7.subarray(0, 10));
      await slowGone;
      assert.ok(Date.now() - started >= 140, "closed before the deadline");

      const bad = await connectTcp(port);
      const badGone = closeOf(bad);
      const wrongCommand = Buffer.from(PROXY_V2_192_0_2_7);
      wrongCommand[12] = 0x23;
      bad.write(wrongCommand);
      assert.equal((await badGone).length, 0);

      const capped = await connectTcp(port);
      const cappedGone = closeOf(capped);
      capped.write(Buffer.concat([PROXY_V2_192_0_2_7, Buffer.from([0x10, 0x0c, 0x00])]));
      assert.equal((await cappedGone).length, 0);
      assert.equal(conns.length, 0);
    },
  );
});

Deno.test({
  name: "TLS after a trusted proxy's PROXY header is unwrapped and keeps the client's address",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const cert = await makeCert(dir, "proxy-tls");
      const context = createSecureContext({
        cert: await Deno.readTextFile(cert.certFile),
        key: await Deno.readTextFile(cert.keyFile),
      });
      const tls = { context: () => context, allowPlaintext: false };
      await withDispatch({ ...trustLoopback, tls }, async ({ port, firstConn }) => {
        const raw = await connectTcp(port);
        raw.write(PROXY_V2_192_0_2_7);
        const secure = tlsConnect({ socket: raw, rejectUnauthorized: false });
        secure.on("error", () => {});
        await new Promise<void>((resolve) => secure.once("secureConnect", () => resolve()));
        secure.write(Buffer.from([0x10, 0x0c, 0x00]));
        const conn = await firstConn;
        assert.equal(conn.remoteAddress, "192.0.2.7");
        assert.equal(conn.secure, true);
        secure.destroy();
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a PROXY header's SSL TLV admits plaintext where TLS is required; without it, not", async () => {
  const tls = { context: () => createSecureContext({}), allowPlaintext: false };
  const withSsl = Buffer.from(PROXY_V2_192_0_2_7);
  // Length 12 + 8, then PP2_TYPE_SSL: client bit set, verify 0.
  withSsl[15] = 20;
  const sslHeader = Buffer.concat([withSsl, Buffer.from([0x20, 0x00, 0x05, 0x01, 0, 0, 0, 0])]);
  await withDispatch({ ...trustLoopback, tls }, async ({ port, firstConn, conns }) => {
    const plain = await connectTcp(port);
    const gone = closeOf(plain);
    plain.write(Buffer.concat([PROXY_V2_192_0_2_7, Buffer.from([0x10, 0x0c, 0x00])]));
    assert.equal((await gone).length, 0, "plaintext without the TLV is refused");
    assert.equal(conns.length, 0);

    const client = await connectTcp(port);
    client.write(Buffer.concat([sslHeader, Buffer.from([0x10, 0x0c, 0x00])]));
    const conn = await firstConn;
    assert.equal(conn.remoteAddress, "192.0.2.7");
    assert.equal(conn.secure, true);
    client.destroy();
  });
});
