import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { Acceptor } from "./acceptor.ts";
import { connectTcp, memoryLog, waitFor } from "./_test_util.ts";

Deno.test("an idle acceptor probes itself and stays healthy", async () => {
  const { log, lines } = memoryLog();
  const seen: Socket[] = [];
  const acceptor = await Acceptor.start({
    role: "listen",
    host: "127.0.0.1",
    port: 0,
    onSocket: (s) => {
      seen.push(s);
      s.destroy();
    },
    log,
    checkMs: 20,
    probeMs: 1000,
  });
  try {
    // Nothing else connects: every socket seen is a probe of the watchdog.
    await waitFor(() => seen.length >= 5, "five probes");
    assert.equal(acceptor.impaired, false);
    assert.deepEqual(lines.filter((l) => l.level === "warn"), []);
    // A real client is accepted as usual.
    const client = await connectTcp(acceptor.address.port);
    await waitFor(() => seen.some((s) => s.remotePort === client.localPort), "the client");
    client.destroy();
  } finally {
    await acceptor.close();
  }
});

Deno.test("an acceptor reports an address it cannot bind", async () => {
  const first = await Acceptor.start({
    role: "listen",
    host: "127.0.0.1",
    port: 0,
    onSocket: (s) => s.destroy(),
    log: memoryLog().log,
  });
  try {
    await assert.rejects(
      Acceptor.start({
        role: "admin",
        host: "127.0.0.1",
        port: first.address.port,
        onSocket: (s) => s.destroy(),
        log: memoryLog().log,
      }),
      /EADDRINUSE|in use/i,
    );
  } finally {
    await first.close();
  }
});

const SOMAXCONN = (() => {
  try {
    return Number(Deno.readTextFileSync("/proc/sys/net/core/somaxconn").trim());
  } catch {
    return 0;
  }
})();

Deno.test({
  name: "a listener queues a reconnect storm beyond the old 511 backlog while its loop is busy",
  // The kernel caps the backlog at net.core.somaxconn: below the storm size nothing is proved.
  ignore: SOMAXCONN < 1024,
  fn: async () => {
    const storm = 800;
    const acceptor = await Acceptor.start({
      role: "listen",
      host: "127.0.0.1",
      port: 0,
      onSocket: (s) => s.destroy(),
      log: memoryLog().log,
    });
    try {
      // The child connects `storm` sockets and reports how many completed the TCP handshake.
      // This process is blocked in outputSync meanwhile, so it accepts none of them: each one
      // that completes sits in the kernel's accept queue, whose length is the listen backlog.
      // The child stops once all connected, or 5 s after the last one did (a SYN dropped by a
      // full queue is not answered while nothing is accepted).
      const script = `
        import { connect } from "node:net";
        const n = ${storm};
        let ok = 0;
        let last = Date.now();
        const sockets = [];
        for (let i = 0; i < n; i++) {
          const s = connect(${acceptor.address.port}, "127.0.0.1");
          s.on("connect", () => { ok++; last = Date.now(); });
          s.on("error", () => {});
          sockets.push(s);
        }
        const start = Date.now();
        while (ok < n && Date.now() - last < 5000 && Date.now() - start < 30000) {
          await new Promise((r) => setTimeout(r, 50));
        }
        console.log(ok);
        Deno.exit(0);
      `;
      const out = new Deno.Command(Deno.execPath(), {
        args: ["eval", script],
        stdout: "piped",
        stderr: "inherit",
      }).outputSync();
      assert.equal(out.code, 0);
      assert.equal(Number(new TextDecoder().decode(out.stdout).trim()), storm);
    } finally {
      await acceptor.close();
    }
  },
});
