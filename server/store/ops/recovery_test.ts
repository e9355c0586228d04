import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { addEndpoint, binaryArgs, T0, testDb } from "./_testing.ts";
import { connected, opsContext, resetOpsContext } from "./context.ts";
import { claimDeliveries } from "./deliveries.ts";
import { type SubmitArgs, submitMessage } from "./messages.ts";
import { disconnect, handshake, startup } from "./recovery.ts";

// spec 7.5 握手完成时 / 任一连接断开时, 7.8 启动恢复.

const GRACE = 60_000;
const TTL_MS = 600_000;

/** Endpoints a and b, online since T0 - 1000 (offline_since T0 - 2000 left from before). */
function freshDb(): DatabaseSync {
  const db = testDb();
  for (const id of ["a", "b"]) {
    addEndpoint(db, id, { onlineSince: T0 - 1000, offlineSince: T0 - 2000 });
  }
  return db;
}

/** Submits message `id` from a to b at T0; returns its seq. */
function send(db: DatabaseSync, id: string, over: Partial<SubmitArgs> = {}): number {
  const args = binaryArgs(id, {
    fingerprint: new Uint8Array([7]),
    ttlSeconds: TTL_MS / 1000,
    ...over,
  });
  return submitMessage(db, args, T0).seq!;
}

function d(db: DatabaseSync, seq: number): { expire: unknown; conn: unknown; state: unknown } {
  const r = db.prepare("SELECT * FROM deliveries WHERE seq = ? AND endpoint_id = 'b'").get(seq)!;
  return { expire: r.expire_at, conn: r.pushed_conn, state: r.state };
}

function endpoint(db: DatabaseSync, id: string): { online: unknown; offline: unknown } {
  const r = db.prepare("SELECT online_since, offline_since FROM endpoints WHERE id = ?").get(id)!;
  return { online: r.online_since, offline: r.offline_since };
}

Deno.test("handshake sets online_since and clears the grace deadline of not-kept deliveries", () => {
  const db = freshDb();
  connected(db, { endpointId: "b", connCode: "k1" }, T0);
  disconnect(db, { endpointId: "b", connCode: "k1", isCurrent: true }, T0);
  const graced = send(db, "graced");
  const kept = send(db, "kept", { keep: true });
  assert.equal(d(db, graced).expire, T0 + GRACE);
  const r = handshake(db, { endpointId: "b" }, T0 + 5);
  assert.deepEqual(r, { onlineSince: T0 + 5, cleared: 1, wasOnline: false });
  assert.equal(endpoint(db, "b").online, T0 + 5);
  assert.equal(d(db, graced).expire, null);
  assert.equal(d(db, kept).expire, T0 + TTL_MS, "kept deliveries keep their TTL");
});

Deno.test("disconnect of the current connection starts the grace period", () => {
  const db = freshDb();
  connected(db, { endpointId: "b", connCode: "k1" }, T0);
  const open = send(db, "open"); // expire_at NULL while connected
  const later = send(db, "later");
  const keptPushed = send(db, "kept-pushed", { keep: true, ttlSeconds: 10 });
  const keptIdle = send(db, "kept-idle", { keep: true, ttlSeconds: 10 });
  db.exec(`UPDATE deliveries SET expire_at = ${T0 + 10 * GRACE} WHERE seq = ${later}`);
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 10 }, T0);
  db.exec(`UPDATE deliveries SET pushed_conn = NULL WHERE seq = ${keptIdle}`);
  const r = disconnect(db, { endpointId: "b", connCode: "k1", isCurrent: true }, T0 + 100);
  assert.equal(r.cleared, 3);
  assert.equal(endpoint(db, "b").offline, T0 + 100);
  assert.deepEqual(d(db, open), { expire: T0 + 100 + GRACE, conn: null, state: "pending" });
  assert.equal(d(db, later).expire, T0 + 10 * GRACE, "a later deadline is kept");
  assert.equal(d(db, keptPushed).expire, T0 + 100 + GRACE, "kept and pushed: extended");
  assert.equal(d(db, keptIdle).expire, T0 + 10_000, "kept, not pushed here: unchanged");
  assert.equal(opsContext.connected.has("b"), false);
});

Deno.test("disconnect of an old connection does not touch the new connection's marks", () => {
  const db = freshDb();
  connected(db, { endpointId: "b", connCode: "old" }, T0);
  const first = send(db, "first");
  const second = send(db, "second");
  claimDeliveries(db, { endpointId: "b", connCode: "old", limit: 1 }, T0);
  // Takeover: the new connection arrives and claims before the old one's disconnect lands.
  connected(db, { endpointId: "b", connCode: "new" }, T0 + 1);
  handshake(db, { endpointId: "b" }, T0 + 1);
  claimDeliveries(db, { endpointId: "b", connCode: "new", limit: 1 }, T0 + 1);
  const r = disconnect(db, { endpointId: "b", connCode: "old", isCurrent: false }, T0 + 2);
  assert.equal(r.cleared, 1);
  assert.deepEqual(d(db, first), { expire: null, conn: null, state: "pending" });
  assert.deepEqual(d(db, second), { expire: null, conn: "new", state: "pending" });
  assert.equal(endpoint(db, "b").offline, T0 - 2000, "still online");
  assert.equal(opsContext.connected.has("b"), true);
});

Deno.test("after the current connection closes a new message gets the grace period", () => {
  // The disconnect op updates the connection view in the same op as offline_since.
  const db = freshDb();
  connected(db, { endpointId: "b", connCode: "k1" }, T0);
  disconnect(db, { endpointId: "b", connCode: "k1", isCurrent: true }, T0);
  const seq = send(db, "m");
  assert.deepEqual(d(db, seq), { expire: T0 + GRACE, conn: null, state: "pending" });
});

Deno.test("startup recovery clears marks and gives every pending delivery the grace period", () => {
  const db = freshDb();
  db.exec("INSERT INTO endpoints (id, login_hash, created_at) VALUES ('never', 'x', 0)");
  db.exec(
    `INSERT INTO endpoints (id, login_hash, created_at, online_since, offline_since)
     VALUES ('was-online', 'x', 0, ${T0 - 10}, ${T0 - 20}), ('online-once', 'x', 0, ${
      T0 - 10
    }, NULL),
            ('was-offline', 'x', 0, ${T0 - 20}, ${T0 - 10})`,
  );
  connected(db, { endpointId: "b", connCode: "k1" }, T0);
  const open = send(db, "open");
  const keptShort = send(db, "kept-short", { keep: true, ttlSeconds: 1 });
  const keptLong = send(db, "kept-long", { keep: true });
  claimDeliveries(db, { endpointId: "b", connCode: "k1", limit: 10 }, T0);
  resetOpsContext();
  const now = T0 + 5000;
  const r = startup(db, {}, now);
  assert.equal(r.deliveries, 3);
  // NULL and earlier deadlines move to now + grace, even a TTL that ran out (spec 7.8 step 1).
  assert.deepEqual(d(db, open), { expire: now + GRACE, conn: null, state: "pending" });
  assert.deepEqual(d(db, keptShort), { expire: now + GRACE, conn: null, state: "pending" });
  assert.deepEqual(d(db, keptLong), { expire: T0 + TTL_MS, conn: null, state: "pending" });
  const cases: [string, unknown][] = [
    ["b", now],
    ["was-online", now],
    ["online-once", now],
    ["was-offline", T0 - 10],
    ["never", null],
  ];
  for (const [id, offline] of cases) assert.equal(endpoint(db, id).offline, offline, id);
  assert.equal(r.endpoints, 4); // a, b, was-online, online-once
});
