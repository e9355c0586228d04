import assert from "node:assert/strict";
import { join } from "node:path";
import { CLUSTER_ENV, ConfigError, DEFAULT_CONFIG, loadConfig, validateConfig } from "./config.ts";

function issuesOf(fn: () => unknown): { path: string; reason: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.issues];
    throw err;
  }
  assert.fail("expected a ConfigError");
}

const PG = { kind: "postgres", postgres_url: "postgres://nixmsg@127.0.0.1:5432/nixmsg" };

Deno.test("without a NATS URL the cluster keys are empty and nothing is required", () => {
  assert.deepEqual(DEFAULT_CONFIG.cluster, {
    node_id: "",
    nats_url: "",
    nats_credentials: "",
    nats_token: "",
  });
  assert.deepEqual(validateConfig({ cluster: null }).cluster, DEFAULT_CONFIG.cluster);
  // A node id alone is harmless on a single node.
  assert.equal(validateConfig({ cluster: { node_id: "n1" } }).cluster.node_id, "n1");
});

Deno.test("a node with PostgreSQL, an id and NATS URLs is accepted", () => {
  const c = validateConfig({
    store: PG,
    cluster: {
      node_id: "node-1",
      nats_url: "nats://127.0.0.1:4222, tls://nats.example:4222",
      nats_credentials: "/etc/nixmsg/node.creds",
    },
  });
  assert.equal(c.cluster.node_id, "node-1");
  assert.equal(c.cluster.nats_url, "nats://127.0.0.1:4222, tls://nats.example:4222");
  assert.equal(c.cluster.nats_credentials, "/etc/nixmsg/node.creds");
});

Deno.test("bad cluster keys are each named, and a token or password is never echoed", () => {
  const issues = issuesOf(() =>
    validateConfig({
      cluster: {
        node_id: "node.1",
        nats_url: "http://user:s3cret@host:4222",
        nats_credentials: "/x.creds",
        nats_token: "tok-s3cret",
        extra: 1,
      },
    })
  );
  const paths = issues.map((i) => i.path).sort();
  assert.deepEqual(paths, [
    "cluster.extra",
    "cluster.nats_token",
    "cluster.nats_url",
    "cluster.nats_url",
    "cluster.node_id",
  ]);
  assert.ok(issues.some((i) => /store\.kind postgres/.test(i.reason)), JSON.stringify(issues));
  assert.ok(!JSON.stringify(issues).includes("s3cret"), JSON.stringify(issues));
});

Deno.test("a NATS URL needs a node id and the PostgreSQL store", () => {
  const issues = issuesOf(() => validateConfig({ cluster: { nats_url: "nats://127.0.0.1:4222" } }));
  assert.deepEqual(issues.map((i) => i.path).sort(), ["cluster.nats_url", "cluster.node_id"]);
  assert.match(issues.find((i) => i.path === "cluster.node_id")!.reason, /NIXMSG_NODE_ID/);
});

Deno.test("the environment replaces the cluster keys and is named in issues", () => {
  const env = {
    [CLUSTER_ENV.node_id]: "node-7",
    [CLUSTER_ENV.nats_url]: "nats://10.0.0.5:4222",
    [CLUSTER_ENV.nats_token]: "t0ken",
  };
  const c = validateConfig({ store: PG, cluster: { node_id: "node-1" } }, env);
  assert.deepEqual(c.cluster, {
    node_id: "node-7",
    nats_url: "nats://10.0.0.5:4222",
    nats_credentials: "",
    nats_token: "t0ken",
  });
  const bad = issuesOf(() => validateConfig({ store: PG }, { [CLUSTER_ENV.nats_url]: "garbage" }));
  assert.deepEqual(bad.map((i) => i.path), [
    "cluster.nats_url (from NIXMSG_NATS_URL)",
    "cluster.node_id",
  ]);
});

Deno.test("loadConfig reads NIXMSG_NODE_ID and NIXMSG_NATS_URL over the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "config.yaml");
    await Deno.writeTextFile(
      path,
      `store:\n  kind: postgres\n  postgres_url: ${PG.postgres_url}\n`,
    );
    const env = {
      NIXMSG_CONFIG: path,
      [CLUSTER_ENV.node_id]: "n3",
      [CLUSTER_ENV.nats_url]: "nats://127.0.0.1:4222",
    };
    const { config } = await loadConfig(env);
    assert.equal(config.cluster.node_id, "n3");
    assert.equal(config.cluster.nats_url, "nats://127.0.0.1:4222");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
