import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// Message reads of the send and push paths (spec 6.2, 7.5).

const SQL_SEND_KEY_EXISTS = "SELECT 1 AS x FROM send_keys WHERE sender_id = ? AND msg_id = ?";
const SQL_ANY_PENDING =
  "SELECT 1 AS x FROM deliveries WHERE seq = ? AND +state = 'pending' LIMIT 1";

/** Whether `senderId` already used message id `id` (its idempotency key is kept, spec 7.3). */
export function sendKeyExists(db: DatabaseSync, senderId: string, id: string): boolean {
  return prepareCached(db, SQL_SEND_KEY_EXISTS).get(senderId, id) !== undefined;
}

/** Whether message `seq` still has a pending delivery (its cached frame is still needed). */
export function anyPendingDelivery(db: DatabaseSync, seq: number): boolean {
  return prepareCached(db, SQL_ANY_PENDING).get(seq) !== undefined;
}
