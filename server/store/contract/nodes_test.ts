import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, T0 } from "./_stores.ts";

// Node leases (issue 30 item 3) on both stores: take, renew, expire and start afresh, release.

const LEASE = 15_000;

contractTest(
  "a node's lease is taken, renewed, restarted after it ran out, and released",
  async (s) => {
    const args = { nodeId: "node-1", address: "10.0.0.1:7443", version: "1.0.0", leaseMs: LEASE };
    assert.deepEqual(await s.run("node.lease", args, T0), {
      startedAt: T0,
      leaseUntil: T0 + LEASE,
    });
    // Renewed in time: the start stays, the lease moves; the address and version follow the node.
    const moved = { ...args, address: "10.0.0.9:7443", version: "1.0.1", connections: 7 };
    assert.deepEqual(await s.run("node.lease", moved, T0 + 5000), {
      startedAt: T0,
      leaseUntil: T0 + 5000 + LEASE,
    });
    assert.deepEqual(await s.query("node.list", {}), [{
      node_id: "node-1",
      address: "10.0.0.9:7443",
      version: "1.0.1",
      started_at: T0,
      lease_until: T0 + 5000 + LEASE,
      renewed_at: T0 + 5000,
      connections: 7,
    }]);
    // After the lease ran out the node counts as restarted.
    const late = T0 + 5000 + LEASE + 1;
    assert.deepEqual(await s.run("node.lease", args, late), {
      startedAt: late,
      leaseUntil: late + LEASE,
    });
    assert.equal(await s.run("node.release", { nodeId: "node-1" }), true);
    assert.equal(await s.run("node.release", { nodeId: "node-1" }), false);
    assert.deepEqual(await s.query("node.list", {}), []);
  },
);

contractTest(
  "a dead node's push marks are released once its lease ran out, a live node's stay",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b");
    await s.addEndpoint("c");
    for (const [node, address] of [["n1", "n1:1"], ["n2", "n2:1"]]) {
      await s.run("node.lease", { nodeId: node, address, version: "1", leaseMs: LEASE }, T0);
    }
    await s.run("context.connected", { endpointId: "b", connCode: "n1.aa" });
    await s.run("context.connected", { endpointId: "c", connCode: "n2.bb" });
    await s.run("message.submit", binaryArgs("k1", { keep: true, ttlSeconds: 3600 }));
    await s.run("message.submit", binaryArgs("k2", { keep: true, ttlSeconds: 3600, toId: "c" }));
    await s.run("delivery.claim", { endpointId: "b", connCode: "n1.aa", limit: 5 });
    await s.run("delivery.claim", { endpointId: "c", connCode: "n2.bb", limit: 5 });
    // Within the lease nothing is reaped.
    assert.deepEqual(await s.run("node.reap", { limit: 10 }, T0 + LEASE - 1), {
      nodes: [],
      deliveries: 0,
      offline: [],
    });
    // n2 renews, n1 does not: n1 is dead, its mark goes, n2's stays.
    await s.run(
      "node.lease",
      { nodeId: "n2", address: "n2:1", version: "1", leaseMs: LEASE },
      T0 + 10_000,
    );
    const late = T0 + LEASE + 1;
    assert.deepEqual(await s.run("node.reap", { limit: 10 }, late), {
      nodes: ["n1"],
      deliveries: 1,
      offline: [],
    });
    assert.deepEqual(
      await s.rows("SELECT endpoint_id, pushed_conn FROM deliveries ORDER BY endpoint_id"),
      [{ endpoint_id: "b", pushed_conn: null }, { endpoint_id: "c", pushed_conn: "n2.bb" }],
    );
    assert.deepEqual((await s.query("node.list", {})).map((n) => n.node_id), ["n2"]);
    assert.deepEqual(await s.run("node.reap", { limit: 10 }, late), {
      nodes: [],
      deliveries: 0,
      offline: [],
    });
  },
);

contractTest("a cluster node's startup recovery clears only its own push marks", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { onlineSince: T0 - 5, offlineSince: null });
  await s.addEndpoint("c", { onlineSince: T0 - 5, offlineSince: null });
  await s.run("context.connected", { endpointId: "b", connCode: "n1.aa" });
  await s.run("context.connected", { endpointId: "c", connCode: "n10.bb" });
  await s.run("message.submit", binaryArgs("k1", { keep: true, ttlSeconds: 3600 }));
  await s.run("message.submit", binaryArgs("k2", { keep: true, ttlSeconds: 3600, toId: "c" }));
  await s.run("delivery.claim", { endpointId: "b", connCode: "n1.aa", limit: 5 });
  await s.run("delivery.claim", { endpointId: "c", connCode: "n10.bb", limit: 5 });
  // "n1." is not a prefix of "n10.": node n10's mark stays; no endpoint goes offline.
  assert.deepEqual(await s.run("recovery.startup", { nodeId: "n1" }, T0 + 10), {
    deliveries: 1,
    endpoints: 0,
  });
  assert.deepEqual(
    await s.rows("SELECT endpoint_id, pushed_conn FROM deliveries ORDER BY endpoint_id"),
    [{ endpoint_id: "b", pushed_conn: null }, { endpoint_id: "c", pushed_conn: "n10.bb" }],
  );
  assert.deepEqual(
    await s.rows("SELECT id, offline_since FROM endpoints WHERE id <> 'a' ORDER BY id"),
    [{ id: "b", offline_since: null }, { id: "c", offline_since: null }],
  );
});

contractTest(
  "a dead node's endpoints go offline at the reap; one that logged in elsewhere stays online",
  async (s) => {
    for (const id of ["a", "b", "c", "d"]) await s.addEndpoint(id);
    for (const node of ["n1", "n2"]) {
      await s.run("node.lease", { nodeId: node, address: node, version: "1", leaseMs: LEASE }, T0);
    }
    // b and c log in on n1, d on n2; c then logs in again on n2 (a later revision).
    const hb = await s.run("endpoint.handshake", { endpointId: "b", nodeId: "n1" }, T0 + 1);
    await s.run("endpoint.handshake", { endpointId: "c", nodeId: "n1" }, T0 + 1);
    await s.run("endpoint.handshake", { endpointId: "d", nodeId: "n2" }, T0 + 1);
    const hc = await s.run("endpoint.handshake", { endpointId: "c", nodeId: "n2" }, T0 + 2);
    // A not-kept message to b waits without a deadline while b is online.
    await s.run("context.connected", { endpointId: "b", connCode: "n1.bb" });
    await s.run("message.submit", binaryArgs("m1", { keep: false }), T0 + 3);
    assert.deepEqual(
      await s.rows("SELECT id, online_node FROM endpoints WHERE id <> 'a' ORDER BY id"),
      [{ id: "b", online_node: "n1" }, { id: "c", online_node: "n2" }, {
        id: "d",
        online_node: "n2",
      }],
    );
    await s.run(
      "node.lease",
      { nodeId: "n2", address: "n2", version: "1", leaseMs: LEASE },
      T0 + 10_000,
    );
    const late = T0 + LEASE + 1;
    assert.deepEqual(await s.run("node.reap", { limit: 10 }, late), {
      nodes: ["n1"],
      deliveries: 0,
      offline: ["b"],
    });
    assert.deepEqual(
      await s.rows(
        "SELECT id, online_since, offline_since, online_node FROM endpoints WHERE id <> 'a' ORDER BY id",
      ),
      [
        { id: "b", online_since: hb.onlineSince, offline_since: late, online_node: null },
        { id: "c", online_since: hc.onlineSince, offline_since: T0, online_node: "n2" },
        { id: "d", online_since: T0 + 1, offline_since: T0, online_node: "n2" },
      ],
    );
    // b's not-kept delivery now waits the grace period, as after a disconnect.
    const [row] = await s.rows("SELECT expire_at FROM deliveries WHERE endpoint_id = 'b'");
    assert.ok(typeof row.expire_at === "number" && row.expire_at > late, JSON.stringify(row));
    // A disconnect clears the holder; n2's restart takes d (still held by n2) offline.
    await s.run("endpoint.disconnect", {
      endpointId: "c",
      connCode: "n2.cc",
      isCurrent: true,
      onlineSince: hc.onlineSince,
    }, T0 + 20_000);
    assert.deepEqual(await s.run("recovery.startup", { nodeId: "n2" }, T0 + 30_000), {
      deliveries: 0,
      endpoints: 1,
    });
    assert.deepEqual(
      await s.rows(
        "SELECT id, offline_since, online_node FROM endpoints WHERE id <> 'a' ORDER BY id",
      ),
      [
        { id: "b", offline_since: late, online_node: null },
        { id: "c", offline_since: T0 + 20_000, online_node: null },
        { id: "d", offline_since: T0 + 30_000, online_node: null },
      ],
    );
  },
);
