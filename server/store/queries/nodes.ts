import type { DatabaseSync } from "node:sqlite";

/** One row of `nodes` (issue 30): a node's lease. */
export interface NodeRow {
  node_id: string;
  address: string;
  version: string;
  started_at: number;
  lease_until: number;
  renewed_at: number;
  /** MQTT connections at the last renewal. */
  connections: number;
}

const SQL_NODES = `SELECT node_id, address, version, started_at, lease_until, renewed_at,
  connections FROM nodes ORDER BY node_id`;

/** Every node's lease, expired ones too, by id. */
export function listNodes(db: DatabaseSync): NodeRow[] {
  return db.prepare(SQL_NODES).all() as unknown as NodeRow[];
}
