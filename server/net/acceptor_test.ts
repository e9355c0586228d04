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
