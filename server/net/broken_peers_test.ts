import assert from "node:assert/strict";
import { WebSocket } from "ws";
import { withListeners } from "./_listener_harness.ts";
import { BROKEN_PEERS } from "./_broken_peers.ts";
import { fetchHttp, HAS_OPENSSL, makeCert, within } from "./_test_util.ts";

function opens(url: string): Promise<string> {
  const ws = new WebSocket(url, ["mqtt"], { rejectUnauthorized: false });
  const open = new Promise<string>((resolve, reject) => {
    ws.once("open", () => {
      resolve(ws.protocol);
      ws.close();
    });
    ws.once("error", reject);
  });
  return within(open, "a WebSocket to open");
}

// issue 10 item 1: without an 'error' listener on each WebSocket, the first peer below ended
// the process with "Invalid WebSocket frame: MASK must be set" (here: an uncaught test error).
for (const peer of BROKEN_PEERS.filter((p) => !p.needsBroker)) {
  Deno.test({
    name: `the listener survives a broken peer: ${peer.name}`,
    ignore: peer.needsTls === true && !HAS_OPENSSL,
    fn: async () => {
      const dir = await Deno.makeTempDir();
      try {
        const tls = peer.needsTls
          ? await makeCert(dir, "srv").then((c) => ({
            cert_file: c.certFile,
            key_file: c.keyFile,
            allow_plaintext: true,
          }))
          : undefined;
        await withListeners({ tls }, async ({ listeners, nextConn }) => {
          const port = listeners.listen.port;
          await peer.run(port);
          // Still serving: HTTP and a new WebSocket with subprotocol mqtt.
          assert.equal((await fetchHttp(port, "/healthz")).status, 200);
          const scheme = peer.needsTls ? "wss" : "ws";
          assert.equal(await opens(`${scheme}://127.0.0.1:${port}/mqtt`), "mqtt");
          const conn = await nextConn();
          if (conn.transport === "ws") conn.ws.terminate();
          else conn.stream.destroy();
        });
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
