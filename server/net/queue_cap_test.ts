import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { withListeners } from "./_listener_harness.ts";
import { HAS_OPENSSL, makeCert, waitFor } from "./_test_util.ts";

const HAS_PYTHON = (() => {
  try {
    return new Deno.Command("python3", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

// A TLS peer that completes the handshake, sends an MQTT CONNECT's first byte and then never
// reads. (A Deno TLS client keeps reading natively even when paused, so Python plays it.)
const NON_READER = `
import socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
s.send(b"\\x10")
time.sleep(30)
`;

// issue 10 item 11: over TLS the bytes wait in the TLS socket, not in the TCP one below it.
Deno.test({
  name: "an MQTT-over-TLS peer that never reads is closed once max_queued_bytes are queued",
  ignore: !HAS_OPENSSL || !HAS_PYTHON,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const cert = await makeCert(dir, "srv");
    const overrides = {
      tls: { cert_file: cert.certFile, key_file: cert.keyFile },
      limits: { max_queued_bytes: 1048576 },
    };
    try {
      await withListeners(overrides, async ({ listeners, nextConn, lines }) => {
        const peer = new Deno.Command("python3", {
          args: ["-c", NON_READER, String(listeners.listen.port)],
          stdout: "null",
          stderr: "null",
        }).spawn();
        try {
          const conn = await nextConn();
          assert.equal(conn.transport, "tcp");
          if (conn.transport !== "tcp") return;
          assert.equal(conn.secure, true);
          const stream = conn.stream;
          stream.on("error", () => {});
          const chunk = Buffer.alloc(64 * 1024);
          let written = 0;
          // Bounded: 64 MiB at most, one chunk per turn of the event loop.
          while (!stream.destroyed && written < 64 << 20) {
            stream.write(chunk);
            written += chunk.length;
            await new Promise((r) => setTimeout(r, 0));
          }
          assert.equal(stream.destroyed, true, `still open after ${written} bytes`);
          await waitFor(() => lines.some((l) => l.msg === "Slow consumer closed"), "the log line");
          const line = lines.find((l) => l.msg === "Slow consumer closed")!;
          assert.ok(Number(line.queued_bytes) > 1048576);
        } finally {
          peer.kill();
          await peer.status;
        }
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
