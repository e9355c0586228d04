// GET /api/admin/nodes (issue 30 item 6, docs/admin-api.md): the nodes' leases in the store, as
// the console will show them. Leases are written through the server's own store, as a cluster
// node's lease loop will; the answer is checked against docs/openapi.json by AdminClient.
import assert from "node:assert/strict";
import { adminSession } from "./helpers/admin.ts";
import { waitFor } from "../server/net/_test_util.ts";

Deno.test("GET /api/admin/nodes lists every lease, alive or expired, and names this node", async () => {
  const { t, admin } = await adminSession({ cluster: { node_id: "node-1" } });
  try {
    const empty = await admin.get("/api/admin/nodes");
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.data.nodes, [], "a single node holds no lease");
    assert.equal(empty.data.this_node, "node-1");
    // The answering node describes itself, so the console shows a single node too.
    const local = empty.data.local as Record<string, unknown>;
    assert.equal(local.id, "node-1");
    assert.ok(t.wsUrl.includes(`//${local.address}/`), `${local.address} is where MQTT listens`);
    assert.equal(local.connections, 0);

    const now = Date.now();
    const store = t.server.store;
    await store.run("node.lease", {
      nodeId: "node-2",
      address: "127.0.0.2:7443",
      version: "9.9.9",
      leaseMs: 60_000,
      connections: 3,
    });
    await store.run("node.lease", {
      nodeId: "node-1",
      address: "127.0.0.1:7443",
      version: "9.9.9",
      leaseMs: 1,
    });
    // node-1's lease of 1 ms runs out at once: it is listed, no longer alive.
    let r = await admin.get("/api/admin/nodes");
    await waitFor(async () => {
      r = await admin.get("/api/admin/nodes");
      return (r.data.nodes as Record<string, unknown>[])[0]?.alive === false;
    }, "node-1's lease to run out");
    assert.equal(r.status, 200);
    const nodes = r.data.nodes as Record<string, unknown>[];
    assert.deepEqual(nodes.map((n) => [n.id, n.address, n.version, n.alive, n.connections]), [
      ["node-1", "127.0.0.1:7443", "9.9.9", false, 0],
      ["node-2", "127.0.0.2:7443", "9.9.9", true, 3],
    ]);
    assert.ok(Number(r.data.server_time) >= Number(nodes[0].lease_until));
    assert.ok(Number(nodes[1].lease_until) >= now + 60_000, JSON.stringify(nodes[1]));

    // Without a session the route is refused like every admin route.
    const anonymous = await fetch(`${t.adminUrl}/api/admin/nodes`);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
  } finally {
    await t.close();
  }
});
