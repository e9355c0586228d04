import assert from "node:assert/strict";
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
    const moved = { ...args, address: "10.0.0.9:7443", version: "1.0.1" };
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
