import assert from "node:assert/strict";
import { createServer } from "node:net";
import { allowListOf } from "./address_policy.ts";
import { type PostOptions, postWebhook } from "./http_post.ts";
import { HAS_OPENSSL, makeCert } from "../net/_test_util.ts";

const OPTS: PostOptions = {
  allow: allowListOf(["127.0.0.1/32"]),
  connectTimeoutMs: 1000,
  responseTimeoutMs: 700,
  maxResponseBytes: 64,
};

/** A real receiver on 127.0.0.1 port 0 that answers with `handler`. */
async function withReceiver(
  handler: (req: Request) => Response | Promise<Response>,
  fn: (url: URL, bodies: string[]) => Promise<void>,
): Promise<void> {
  const bodies: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    bodies.push(await req.text());
    return handler(req);
  });
  try {
    await fn(new URL(`http://127.0.0.1:${server.addr.port}/hook`), bodies);
  } finally {
    await server.shutdown();
  }
}

Deno.test("postWebhook() sends the body and headers and takes a 2xx as ok", async () => {
  await withReceiver((req) => new Response(req.headers.get("webhook-id")), async (url, bodies) => {
    const r = await postWebhook(url, '{"a":"中"}', { "webhook-id": "e1" }, OPTS);
    assert.deepEqual([r.ok, r.status, r.error], [true, 200, ""]);
    assert.deepEqual(bodies, ['{"a":"中"}']);
  });
});

Deno.test("postWebhook() fails on 500, on a redirect it does not follow, and on a slow answer", async () => {
  await withReceiver(() => new Response("no", { status: 500 }), async (url) => {
    const r = await postWebhook(url, "{}", {}, OPTS);
    assert.deepEqual([r.ok, r.status, r.error], [false, 500, "http_500"]);
  });
  await withReceiver(
    () => new Response(null, { status: 307, headers: { location: "http://1.1.1.1/" } }),
    async (url, bodies) => {
      const r = await postWebhook(url, "{}", {}, OPTS);
      assert.deepEqual([r.ok, r.status], [false, 307]);
      assert.equal(bodies.length, 1);
    },
  );
  let release = () => {};
  const gate = new Promise<void>((r) => release = r);
  await withReceiver(async () => {
    await gate;
    return new Response("late");
  }, async (url) => {
    const r = await postWebhook(url, "{}", {}, OPTS);
    release();
    assert.deepEqual([r.ok, r.error], [false, "timeout"]);
  });
  // Headers in time, but the body drips past the deadline.
  let release2 = () => {};
  const gate2 = new Promise<void>((r) => release2 = r);
  await withReceiver(() => {
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new TextEncoder().encode("a"));
        await gate2;
        c.close();
      },
    });
    return new Response(body);
  }, async (url) => {
    const r = await postWebhook(url, "{}", {}, { ...OPTS, maxResponseBytes: 1024 });
    release2();
    assert.deepEqual([r.ok, r.error], [false, "timeout"]);
  });
});

Deno.test("postWebhook() reads at most max_response_bytes of a big answer", async () => {
  await withReceiver(() => new Response("x".repeat(1_000_000)), async (url) => {
    const r = await postWebhook(url, "{}", {}, OPTS);
    assert.deepEqual([r.ok, r.status], [true, 200]);
  });
});

Deno.test("postWebhook() reports a refused connection and a refused address", async () => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  const refused = await postWebhook(new URL(`http://127.0.0.1:${port}/`), "{}", {}, OPTS);
  assert.deepEqual([refused.ok, refused.error], [false, "refused"]);
  const denied = await postWebhook(
    new URL(`http://localhost:${port}/`),
    "{}",
    {},
    { ...OPTS, allow: allowListOf([]) },
  );
  assert.deepEqual([denied.ok, denied.error], [false, "address_refused"]);
  // An IP literal is checked too, though it needs no DNS lookup.
  for (const host of ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]"]) {
    const literal = await postWebhook(
      new URL(`http://${host}:${port}/`),
      "{}",
      {},
      { ...OPTS, allow: allowListOf([]) },
    );
    assert.deepEqual([literal.ok, literal.error], [false, "address_refused"], host);
  }
});

Deno.test({
  name: "postWebhook() speaks https and refuses a certificate it cannot trust",
  ignore: !HAS_OPENSSL,
}, async () => {
  const dir = await Deno.makeTempDir();
  const cert = await makeCert(dir, "hook");
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(cert.certFile),
    key: await Deno.readTextFile(cert.keyFile),
    onListen() {},
  }, () => new Response("ok"));
  try {
    const allow = allowListOf(["localhost", "127.0.0.1/32"]);
    const r = await postWebhook(
      new URL(`https://localhost:${server.addr.port}/hook`),
      "{}",
      {},
      { ...OPTS, allow },
    );
    // Self-signed: the TLS handshake fails, which is a failed attempt, not a crash.
    assert.equal(r.ok, false);
    assert.equal(r.status, 0);
    assert.equal(r.error, "tls");
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
