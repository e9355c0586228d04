// issue 10 item 1: a real `nixmsg serve` child survives every kind of broken peer, each error
// handled by its own connection (the crash guard logs nothing), and still serves afterwards.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { KEEP, PW, sendFrame } from "./helpers/messaging.ts";
import { AppReceiver } from "./helpers/crash_node.ts";
import { countFaults, reportFaults } from "./helpers/fault_counts.ts";
import { startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { BROKEN_PEERS } from "../server/net/_broken_peers.ts";
import { fetchHttp, HAS_OPENSSL, makeCert } from "../server/net/_test_util.ts";

Deno.test({
  name: "a served process survives every broken peer and still logs devices in",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const certDir = await Deno.makeTempDir();
    const cert = await makeCert(certDir, "srv");
    const home = await prepareHome(
      {
        tls: { cert_file: cert.certFile, key_file: cert.keyFile, allow_plaintext: true },
        log: { level: "debug" },
      },
      ["a", "b"],
      PW,
    );
    const server = await startServerProcess(home);
    let crashes = 0; // exits before the test's own stop
    let stopping = false;
    server.exited.then(() => {
      if (!stopping) crashes++;
    });
    try {
      for (const peer of BROKEN_PEERS) {
        await peer.run(server.port).catch((err) => {
          throw new Error(`${peer.name}: ${(err as Error).message}`);
        });
        assert.equal((await fetchHttp(server.port, "/healthz")).status, 200, peer.name);
      }
      const ws = await online(`ws://127.0.0.1:${server.port}/mqtt`, "a", PW);
      await ws.client.close();
      // Afterwards kept messages still arrive, once each: a over TCP, b's application over WS.
      const b = new AppReceiver("b");
      const tcp = await online(`mqtt://127.0.0.1:${server.port}`, "a", PW);
      try {
        await b.connect(`ws://127.0.0.1:${server.port}/mqtt`);
        const ids = ["bp0", "bp1", "bp2", "bp3", "bp4"];
        for (const id of ids) {
          const r = await tcp.client.request(sendFrame(id, "b", `body of ${id}`, KEEP));
          assert.equal(r.ok, true, JSON.stringify(r));
        }
        const settled = await b.settleAcked("a", ids);
        reportFaults({
          key: "broken-peers",
          fault: "every broken peer against a served process, then kept messages",
          ...countFaults(ids, [b.of("a")]),
          crashes,
          ms: settled.ms,
          figures: { peers: BROKEN_PEERS.length },
        });
      } finally {
        await b.close();
        await tcp.client.close();
      }
      const guarded = server.logs.filter((l) => /kept from ending the process/.test(String(l.msg)));
      assert.deepEqual(guarded, []);
    } finally {
      stopping = true;
      assert.equal(await server.stop(), 0);
      await home.cleanup();
      await Deno.remove(certDir, { recursive: true });
    }
  },
});
