import type { NodeRow } from "../../queries/nodes.ts";
import type { PgReader } from "../op.ts";

const SQL_NODES = `SELECT node_id, address, version, started_at, lease_until, renewed_at,
  connections FROM nodes ORDER BY node_id`;

/** Every node's lease by id; the twin of server/store/queries/nodes.ts. */
export async function listNodes(r: PgReader): Promise<NodeRow[]> {
  return (await r.q<NodeRow>(SQL_NODES)).map((n) => ({
    node_id: n.node_id,
    address: n.address,
    version: n.version,
    started_at: Number(n.started_at),
    lease_until: Number(n.lease_until),
    renewed_at: Number(n.renewed_at),
    connections: Number(n.connections),
  }));
}
