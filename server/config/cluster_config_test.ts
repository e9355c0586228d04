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
    lease_seconds: 15,
    poll_ms: 1000,
    reap_seconds: 5,
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
    lease_seconds: 15,
    poll_ms: 1000,
    reap_seconds: 5,
  });
  const bad = issuesOf(() => validateConfig({ store: PG }, { [CLUSTER_ENV.nats_url]: "garbage" }));
  assert.deepEqual(bad.map((i) => i.path), [
    "cluster.nats_url (from NIXMSG_NATS_URL)",
    "cluster.node_id",
  ]);
});

Deno.test("the lease, poll and reap periods are read, checked and may come from the environment", () => {
  const c = validateConfig({
    store: PG,
    cluster: { lease_seconds: 2.5, poll_ms: 200, reap_seconds: 0.5 },
  });
  assert.deepEqual(
    [c.cluster.lease_seconds, c.cluster.poll_ms, c.cluster.reap_seconds],
    [2.5, 200, 0.5],
  );
  const fromEnv = validateConfig({ cluster: { poll_ms: 200 } }, {
    [CLUSTER_ENV.lease_seconds]: "30",
    [CLUSTER_ENV.poll_ms]: "500",
    [CLUSTER_ENV.reap_seconds]: "10",
  }).cluster;
  assert.deepEqual([fromEnv.lease_seconds, fromEnv.poll_ms, fromEnv.reap_seconds], [30, 500, 10]);

  // Each bad value is named, with the key it came from.
  const bad = issuesOf(() =>
    validateConfig({ cluster: { lease_seconds: 0, poll_ms: 1.5, reap_seconds: "5" } })
  );
  assert.deepEqual(bad, [
    { path: "cluster.lease_seconds", reason: "must be greater than 0" },
    { path: "cluster.poll_ms", reason: "must be an integer" },
    { path: "cluster.reap_seconds", reason: "must be a number" },
  ]);
  const badEnv = issuesOf(() =>
    validateConfig({}, { [CLUSTER_ENV.poll_ms]: "soon", [CLUSTER_ENV.reap_seconds]: "-1" })
  );
  assert.deepEqual(badEnv, [
    { path: "cluster.poll_ms (from NIXMSG_CLUSTER_POLL_MS)", reason: "must be an integer" },
    {
      path: "cluster.reap_seconds (from NIXMSG_CLUSTER_REAP_SECONDS)",
      reason: "must be greater than 0",
    },
  ]);
  assert.deepEqual(issuesOf(() => validateConfig({ cluster: { poll_ms: 5 } })), [
    { path: "cluster.poll_ms", reason: "must be at least 10" },
  ]);

  // The lease must outlast a poll and a reap, or live nodes would be taken for dead.
  const short = issuesOf(() =>
    validateConfig({ cluster: { lease_seconds: 1, poll_ms: 1000, reap_seconds: 5 } })
  );
  assert.deepEqual(short.map((i) => i.path), ["cluster.lease_seconds", "cluster.lease_seconds"]);
  assert.match(short[0].reason, /longer than cluster\.poll_ms/);
  assert.match(short[1].reason, /longer than cluster\.reap_seconds/);
  assert.deepEqual(
    issuesOf(() => validateConfig({}, { [CLUSTER_ENV.lease_seconds]: "4" })).map((i) => i.reason),
    ["must be longer than cluster.reap_seconds (4 s is not more than 5 s)"],
  );
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
