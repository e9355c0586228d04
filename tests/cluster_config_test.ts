// issue 30 item 1: the cluster keys through the real CLI. check-config accepts a node's
// configuration and names bad keys. Serving as a cluster node: tests/cluster_test.ts.
import assert from "node:assert/strict";
import { makeTestHome, runCli } from "./helpers/server_process.ts";
import { pgTestStore } from "./helpers/pg_test_store.ts";
import { pgIgnored } from "../server/store/postgres/_testing.ts";

const PG = { kind: "postgres", postgres_url: "postgres://nixmsg@127.0.0.1:1/nixmsg" };

Deno.test("check-config accepts a node's cluster keys and names the bad ones", async () => {
  const home = await makeTestHome({
    store: PG,
    cluster: { node_id: "node-1", nats_url: "nats://127.0.0.1:4222" },
  });
  try {
    const ok = await runCli(home, ["check-config"]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /: OK$/m);

    home.env.NIXMSG_NODE_ID = "bad.id";
    home.env.NIXMSG_NATS_TOKEN = "tok-s3cret";
    home.env.NIXMSG_NATS_CREDENTIALS = "/etc/node.creds";
    const bad = await runCli(home, ["check-config"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /cluster\.node_id \(from NIXMSG_NODE_ID\)/);
    assert.match(bad.stderr, /cluster\.nats_token/);
    assert.ok(!bad.stderr.includes("tok-s3cret"), "the token is not printed");
  } finally {
    await home.cleanup();
  }
});

Deno.test({
  name: "serve as a cluster node refuses to start when the NATS credentials file is unreadable",
  ignore: pgIgnored(),
  fn: async () => {
    const pg = await pgTestStore();
    const home = await makeTestHome({
      ...pg.overrides,
      cluster: {
        node_id: "node-1",
        nats_url: "nats://127.0.0.1:1",
        nats_credentials: "/nonexistent/node.creds",
      },
    });
    try {
      const r = await runCli(home, ["serve"]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /Cannot read cluster\.nats_credentials \/nonexistent\/node\.creds/);
    } finally {
      await home.cleanup();
      await pg.drop();
    }
  },
});
