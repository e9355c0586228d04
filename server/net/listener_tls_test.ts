import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { WebSocket } from "ws";
import { createRouter } from "../http/router.ts";
import { startListeners } from "./listener.ts";
import { withListeners } from "./_listener_harness.ts";
import {
  closeOf,
  connectTcp,
  fetchHttp,
  HAS_OPENSSL,
  makeCert,
  memoryLog,
  type TestCert,
  testConfig,
  waitFor,
  within,
} from "./_test_util.ts";
import type { MqttConn } from "./types.ts";

interface Certs {
  readonly a: TestCert;
  readonly b: TestCert;
  /** Where the server reads its certificate; holds `a` at the start. */
  readonly live: { readonly cert_file: string; readonly key_file: string };
  install(cert: TestCert): Promise<void>;
}

/** Two certificates in a temp dir, `a` installed as the live pair. */
async function withCerts(body: (c: Certs) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const a = await makeCert(dir, "a");
    const b = await makeCert(dir, "b");
    const live = { cert_file: join(dir, "fullchain.pem"), key_file: join(dir, "privkey.pem") };
    const install = async (c: TestCert) => {
      await copyFile(c.keyFile, live.key_file);
      await copyFile(c.certFile, live.cert_file);
    };
    await install(a);
    await body({ a, b, live, install });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Completes a TLS handshake, offering `alpn` when given. */
function connectTls(port: number, alpn?: string[]): Promise<TLSSocket> {
  return within(
    new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host: "127.0.0.1",
        port,
        rejectUnauthorized: false,
        ALPNProtocols: alpn,
      }, () => {
        socket.off("error", reject);
        resolve(socket);
      });
      socket.once("error", reject);
    }),
    "the TLS handshake",
  );
}

function fingerprint(socket: TLSSocket): string {
  return socket.getPeerCertificate().fingerprint256;
}

/** Reads exactly `n` bytes from a stream. */
function readBytes(stream: Duplex, n: number): Promise<number[]> {
  const chunks: Buffer[] = [];
  return within(
    new Promise((resolve) => {
      stream.on("data", (c: Buffer) => {
        chunks.push(c);
        const all = Buffer.concat(chunks);
        if (all.length >= n) resolve([...all.subarray(0, n)]);
      });
      stream.resume();
    }),
    `${n} bytes`,
  );
}

function tcpStream(conn: MqttConn) {
  assert.equal(conn.transport, "tcp");
  if (conn.transport !== "tcp") throw new Error("Expect a TCP connection");
  return conn.stream;
}

const TLS_TEST = { ignore: !HAS_OPENSSL };

Deno.test({
  ...TLS_TEST,
  name: "with allow_plaintext, HTTP and HTTPS are served on the same port",
  fn: () =>
    withCerts(({ live }) =>
      withListeners({ tls: { ...live, allow_plaintext: true } }, async ({ listeners }) => {
        const port = listeners.listen.port;
        const plain = await fetchHttp(port, "/api/client/x");
        assert.deepEqual(plain.json, {
          route: "client",
          peer: { remoteAddress: "127.0.0.1", secure: false },
        });
        const secure = await fetchHttp(port, "/api/client/x", { tls: true });
        assert.deepEqual(secure.json, {
          route: "client",
          peer: { remoteAddress: "127.0.0.1", secure: true },
        });
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "with a certificate and no allow_plaintext, a plaintext connection is closed",
  fn: () =>
    withCerts(({ live }) =>
      withListeners({ tls: { ...live } }, async ({ listeners, lines }) => {
        const port = listeners.listen.port;
        const client = await connectTcp(port);
        const reply = closeOf(client);
        client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert.equal((await reply).length, 0);
        assert.equal((await fetchHttp(port, "/healthz", { tls: true })).status, 200);
        assert.equal(lines.filter((l) => l.level === "warn").length, 0);
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "a TLS client offering ALPN mqtt is accepted and reaches the MQTT handler (spec 4.2)",
  fn: () =>
    withCerts(({ live }) =>
      withListeners({ tls: { ...live } }, async ({ listeners, nextConn }) => {
        const client = await connectTls(listeners.listen.port, ["mqtt"]);
        const conn = nextConn();
        client.write(Buffer.from([0x10, 0x02, 0x00, 0x04]));
        const c = await conn;
        assert.equal(c.secure, true);
        assert.equal(c.remoteAddress, "127.0.0.1");
        assert.deepEqual(await readBytes(tcpStream(c), 4), [0x10, 0x02, 0x00, 0x04]);
        client.destroy();
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "WebSocket MQTT over TLS reaches onMqtt as secure",
  fn: () =>
    withCerts(({ live }) =>
      withListeners({ tls: { ...live } }, async ({ listeners, nextConn }) => {
        const conn = nextConn();
        const ws = new WebSocket(`wss://127.0.0.1:${listeners.listen.port}/mqtt`, ["mqtt"], {
          rejectUnauthorized: false,
        });
        const open = new Promise((resolve, reject) =>
          ws.once("open", resolve).once("error", reject)
        );
        await within(open, "the WebSocket to open");
        const c = await conn;
        assert.equal(c.transport, "ws");
        assert.equal(c.secure, true);
        const closed = new Promise((r) => ws.once("close", r));
        ws.close();
        await within(closed, "the WebSocket to close");
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "a TLS connection that sends nothing after the handshake is closed on time",
  fn: () =>
    withCerts(({ live }) =>
      withListeners({ tls: { ...live }, first_byte_seconds: 0.2 }, async ({ listeners }) => {
        const client = await connectTls(listeners.listen.port);
        const started = Date.now();
        await closeOf(client);
        assert.ok(Date.now() - started >= 150, "closed before the timeout");
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "a swapped certificate serves new connections while old ones stay up (spec 4.2)",
  fn: () =>
    withCerts(({ a, b, live, install }) =>
      withListeners({ tls: { ...live } }, async ({ listeners, nextConn }) => {
        const port = listeners.listen.port;
        const old = await connectTls(port);
        assert.equal(fingerprint(old), a.fingerprint256);
        const oldConn = nextConn();
        old.write(Buffer.from([0x10, 0x01]));
        const serverSide = tcpStream(await oldConn);
        assert.deepEqual(await readBytes(serverSide, 2), [0x10, 0x01]);

        await install(b);
        await listeners.reloadTlsNow();
        const fresh = await connectTls(port);
        assert.equal(fingerprint(fresh), b.fingerprint256);
        fresh.destroy();

        // The old connection still carries bytes both ways.
        const more = readBytes(serverSide, 2);
        old.write(Buffer.from([0xc0, 0x00]));
        assert.deepEqual(await more, [0xc0, 0x00]);
        const back = readBytes(old, 2);
        serverSide.write(Buffer.from([0xd0, 0x00]));
        assert.deepEqual(await back, [0xd0, 0x00]);
        old.destroy();
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "the listener notices changed certificate files every reload_check_seconds",
  fn: () =>
    withCerts(({ b, live, install }) =>
      withListeners({ tls: { ...live, reload_check_seconds: 0.05 } }, async ({ listeners }) => {
        await install(b);
        await waitFor(async () => {
          const s = await connectTls(listeners.listen.port);
          const now = fingerprint(s);
          s.destroy();
          return now === b.fingerprint256;
        }, "the new certificate on a new connection");
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "a new pair that fails to load keeps the old certificate and logs an error",
  fn: () =>
    withCerts(({ a, b, live }) =>
      withListeners({ tls: { ...live } }, async ({ listeners, lines }) => {
        await copyFile(b.certFile, live.cert_file); // the key of `a` stays: a mismatch
        await listeners.reloadTlsNow();
        const s = await connectTls(listeners.listen.port);
        assert.equal(fingerprint(s), a.fingerprint256);
        s.destroy();
        assert.ok(lines.some((l) => l.level === "error" && /TLS/.test(String(l.msg))));
      })
    ),
});

Deno.test({
  ...TLS_TEST,
  name: "a bad certificate at start-up fails startListeners",
  fn: () =>
    withCerts(async ({ a, b }) => {
      const dataDir = await Deno.makeTempDir();
      try {
        const { log } = memoryLog();
        const config = testConfig({
          data_dir: dataDir,
          tls: { cert_file: a.certFile, key_file: b.keyFile },
        });
        await assert.rejects(
          startListeners({ config, log, http: createRouter([], { log }), onMqtt: () => {} }),
          /does not match/,
        );
      } finally {
        await Deno.remove(dataDir, { recursive: true });
      }
    }),
});
