import assert from "node:assert/strict";
import { WebSocket } from "ws";
import { memoryLog } from "./_test_util.ts";
import { ConnLimiter, resolveConnCaps } from "./conn_caps.ts";
import { withListeners } from "./_listener_harness.ts";
import { closeOf, connectTcp, fetchHttp, within } from "./_test_util.ts";

Deno.test("resolveConnCaps keeps headroom below the descriptor limit", () => {
  const d = {
    max_connections: 0,
    max_connections_per_ip: 0,
    max_clients: 2000,
    max_http_connections: 1000,
    max_http_connections_per_ip: 0,
    max_unauthenticated_per_ip: 0,
  };
  const small = resolveConnCaps(d, 1024);
  assert.equal(small.total, 1024 - 102);
  assert.equal(small.perIp, Math.floor(small.total / 4));
  // issue 28: the pre-login shares are derived too.
  assert.equal(small.httpPerIp, 100);
  assert.equal(small.unauthenticatedPerIp, Math.floor(small.perIp / 2));
  assert.match(small.warnings.join("\n"), /max_clients 2000 cannot be reached/);

  const big = resolveConnCaps(d, 65536);
  assert.equal(big.total, 65536 - 6553);
  assert.deepEqual(big.warnings, []);

  assert.equal(resolveConnCaps(d, 100).total, 36); // at least 64 descriptors of headroom
  const explicit = resolveConnCaps(
    { ...d, max_connections: 5000, max_connections_per_ip: 9000 },
    1024,
  );
  assert.equal(explicit.total, 5000);
  assert.equal(explicit.perIp, 5000);
  assert.match(explicit.warnings.join("\n"), /leaves less than 102 descriptors of headroom/);
});

Deno.test("ConnLimiter refuses past each cap and frees slots on release", () => {
  const { log, lines } = memoryLog();
  const limiter = new ConnLimiter(
    { fdLimit: null, total: 3, perIp: 2, httpPerIp: 1, unauthenticatedPerIp: 1, warnings: [] },
    log,
  );
  const a1 = limiter.openConnection("198.51.100.1")!;
  const a2 = limiter.openConnection("198.51.100.1")!;
  assert.equal(limiter.openConnection("198.51.100.1"), null);
  assert.equal(lines.at(-1)?.msg, "Connection refused: too many connections from one address");
  const proxy = limiter.openConnection(null)!;
  assert.equal(limiter.openConnection("198.51.100.2"), null);
  assert.equal(lines.at(-1)?.msg, "Connection refused: too many connections open");
  a1();
  a1(); // a second release is ignored
  assert.equal(limiter.open, 2);
  assert.notEqual(limiter.openConnection("198.51.100.1"), null);
  a2();
  proxy();
});

Deno.test("the listener closes connections past the per-IP cap and serves other addresses", async () => {
  await withListeners({ limits: { max_connections_per_ip: 2 } }, async ({ listeners, lines }) => {
    const port = listeners.listen.port;
    const held = [await connectTcp(port, "127.0.0.1", "127.0.0.2")];
    held.push(await connectTcp(port, "127.0.0.1", "127.0.0.2"));
    for (const s of held) s.on("error", () => {});
    const third = await connectTcp(port, "127.0.0.1", "127.0.0.2");
    assert.equal((await closeOf(third)).length, 0);
    const other = await fetchHttp(port, "/healthz", { localAddress: "127.0.0.3" });
    assert.equal(other.status, 200);
    const warn = lines.find((l) =>
      l.msg === "Connection refused: too many connections from one address"
    );
    assert.equal(warn?.remote, "127.0.0.2");
    for (const s of held) s.destroy();
  });
});

Deno.test("behind a trusted proxy the per-IP cap applies to the forwarded client", async () => {
  await withListeners(
    {
      trusted_proxies: ["127.0.0.1/32"],
      limits: { max_connections_per_ip: 2, max_unauthenticated_per_ip: 10 },
    },
    async ({ listeners, nextConn }) => {
      const url = `ws://127.0.0.1:${listeners.listen.port}/mqtt`;
      const open = (client: string) => {
        const ws = new WebSocket(url, ["mqtt"], { headers: { "X-Forwarded-For": client } });
        const opened = new Promise<number>((resolve) => {
          ws.once("open", () => resolve(101));
          ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
          ws.once("error", () => resolve(0));
        });
        return { ws, status: within(opened, "the upgrade") };
      };
      const a = [open("203.0.113.9"), open("203.0.113.9")];
      assert.deepEqual(await Promise.all(a.map((x) => x.status)), [101, 101]);
      await nextConn();
      await nextConn();
      const over = open("203.0.113.9");
      assert.equal(await over.status, 503);
      const another = open("203.0.113.10");
      assert.equal(await another.status, 101);
      await nextConn();
      for (const x of [...a, over, another]) x.ws.terminate();
    },
  );
});

Deno.test("the per-IP cap counts every address of one IPv6 /64 together (issue 28)", async () => {
  await withListeners(
    {
      trusted_proxies: ["127.0.0.1/32"],
      limits: { max_connections_per_ip: 2, max_unauthenticated_per_ip: 10 },
    },
    async ({ listeners, nextConn }) => {
      const url = `ws://127.0.0.1:${listeners.listen.port}/mqtt`;
      const open = (client: string) => {
        const ws = new WebSocket(url, ["mqtt"], { headers: { "X-Forwarded-For": client } });
        const opened = new Promise<number>((resolve) => {
          ws.once("open", () => resolve(101));
          ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
          ws.once("error", () => resolve(0));
        });
        return { ws, status: within(opened, "the upgrade") };
      };
      const a = [open("2001:db8:5:6::1"), open("2001:db8:5:6::2")];
      assert.deepEqual(await Promise.all(a.map((x) => x.status)), [101, 101]);
      await nextConn();
      await nextConn();
      // A third address of the same /64 is over the cap; one of another /64 is not.
      const over = open("2001:db8:5:6:ffff::3");
      assert.equal(await over.status, 503);
      const another = open("2001:db8:5:7::1");
      assert.equal(await another.status, 101);
      await nextConn();
      for (const x of [...a, over, another]) x.ws.terminate();
    },
  );
});

/** Opens `n` TCP connections from `from` at once; resolves how many the server closed unasked. */
async function burstOf(port: number, from: string, n: number): Promise<number> {
  const sockets = await Promise.all(
    Array.from({ length: n }, () => connectTcp(port, "127.0.0.1", from)),
  );
  const closed = sockets.map((s) =>
    new Promise<boolean>((resolve) => {
      s.on("error", () => {});
      if (s.destroyed) return resolve(true);
      const timer = setTimeout(() => resolve(false), 1000);
      s.once("close", () => {
        clearTimeout(timer);
        resolve(true);
      });
    })
  );
  const closedCount = (await Promise.all(closed)).filter((c) => c).length;
  for (const s of sockets) s.destroy();
  return closedCount;
}

Deno.test("the listener refuses new connections past the per-address rate, and another address is served (issue 28)", async () => {
  // 2 a second with a burst of 4 (twice the rate): 40 at once from one address cannot all pass.
  await withListeners({ limits: { max_conn_rate_per_ip: 2 } }, async ({ listeners, lines }) => {
    const port = listeners.listen.port;
    const refused = await burstOf(port, "127.0.0.2", 40);
    assert.ok(refused >= 30, `${refused} of 40 refused`);
    const other = await fetchHttp(port, "/healthz", { localAddress: "127.0.0.3" });
    assert.equal(other.status, 200);
    const warn = lines.find((l) =>
      l.msg === "Connection refused: too many new connections from one address"
    );
    assert.equal(warn?.remote, "127.0.0.2");
  });
});

Deno.test("the listener refuses new connections past its own rate, whichever address they come from (issue 28)", async () => {
  await withListeners({ limits: { max_conn_rate: 2 } }, async ({ listeners, lines }) => {
    const port = listeners.listen.port;
    const counts = await Promise.all(
      ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"].map((a) => burstOf(port, a, 10)),
    );
    const refused = counts.reduce((a, b) => a + b, 0);
    assert.ok(refused >= 30, `${refused} of 40 refused`);
    const warn = lines.find((l) =>
      l.msg === "Connection refused: too many new connections on this listener"
    );
    assert.ok(warn !== undefined, "the listener's rate was logged");
  });
});
