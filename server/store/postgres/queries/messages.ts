import type { PgReader } from "../op.ts";

// Message reads of the send and push paths (spec 6.2, 7.5); the twin of
// server/store/queries/messages.ts.

const SQL_SEND_KEY_EXISTS = "SELECT 1 AS x FROM send_keys WHERE sender_id = $1 AND msg_id = $2";
const SQL_ANY_PENDING =
  "SELECT 1 AS x FROM deliveries WHERE seq = $1 AND state = 'pending' LIMIT 1";

/** Whether `senderId` already used message id `id`. */
export async function sendKeyExists(r: PgReader, senderId: string, id: string): Promise<boolean> {
  return (await r.q(SQL_SEND_KEY_EXISTS, [senderId, id])).length > 0;
}

/** Whether message `seq` still has a pending delivery. */
export async function anyPendingDelivery(r: PgReader, seq: number): Promise<boolean> {
  return (await r.q(SQL_ANY_PENDING, [seq])).length > 0;
}
