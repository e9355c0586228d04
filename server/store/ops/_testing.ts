// Shared fixtures for the op and query tests: a real in-memory SQLite database with the schema of
// spec 7.7, and small writers for the rows the tests start from. Not a test file itself.
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../migrations.ts";
import { OpError } from "../op_error.ts";
import { resetOpsContext } from "./context.ts";
import { claimDeliveries } from "./deliveries.ts";
import { type SubmitArgs, submitMessage, type SubmitResult } from "./messages.ts";

/** A fixed clock for tests. */
export const T0 = 1_750_000_000_000;

/** A fresh `:memory:` database with every migration applied and the ops context reset. */
export function testDb(): DatabaseSync {
  resetOpsContext();
  const db = new DatabaseSync(":memory:");
  // As in `migrate`: table rebuilds run with foreign keys off.
  db.exec("PRAGMA foreign_keys = OFF");
  for (const m of MIGRATIONS) db.exec(m.sql);
  db.exec("PRAGMA foreign_keys = ON");
  return db;
}

/** Optional columns of {@link addEndpoint}. */
export interface EndpointFixture {
  name?: string;
  enabled?: boolean;
  onlineSince?: number | null;
  offlineSince?: number | null;
  talkHash?: string | null;
  talkVersion?: number;
  sessionHash?: string | null;
}

/** Inserts an endpoint row; offline since T0 unless told otherwise. */
export function addEndpoint(db: DatabaseSync, id: string, o: EndpointFixture = {}): void {
  db.prepare(
    `INSERT INTO endpoints (id, name, login_hash, created_at, enabled, online_since,
      offline_since, talk_hash, talk_version, session_hash) VALUES (?, ?, 'x', 0, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    o.name ?? "",
    o.enabled === false ? 0 : 1,
    o.onlineSince ?? null,
    o.offlineSince === undefined ? T0 : o.offlineSince,
    o.talkHash ?? null,
    o.talkVersion ?? 0,
    o.sessionHash ?? null,
  );
}

/** Inserts a group owned by `members[0]`; member i joined at `joinedAt + i`. */
export function addGroup(db: DatabaseSync, id: string, members: string[], joinedAt = 0): void {
  db.prepare("INSERT INTO groups (id, name, owner_id, created_at) VALUES (?, ?, ?, 0)")
    .run(id, id, members[0]);
  members.forEach((m, i) => {
    db.prepare("INSERT INTO group_members (group_id, endpoint_id, joined_at) VALUES (?, ?, ?)")
      .run(id, m, joinedAt + i);
  });
}

let counter = 0;

/** Submits a message (immediate, not kept, with receipt) through `message.submit`. */
export function send(
  db: DatabaseSync,
  senderId: string,
  over: Partial<SubmitArgs> = {},
  now = T0,
): SubmitResult {
  return submitMessage(db, {
    senderId,
    id: `m${++counter}`,
    fingerprint: new Uint8Array([counter & 0xff]),
    toKind: "endpoint",
    toId: "",
    body: new TextEncoder().encode("hello"),
    bodyEnc: "utf8",
    contentType: "text/plain",
    meta: "{}",
    sendAt: now,
    keep: true,
    ttlSeconds: 600,
    receipt: true,
    ...over,
  }, now);
}

/**
 * The arguments of a one-byte binary message from "a" to endpoint "b" due at T0 (base64,
 * not kept, 60 s TTL, with receipt); `over` replaces any of them.
 */
export function binaryArgs(id: string, over: Partial<SubmitArgs> = {}): SubmitArgs {
  return {
    senderId: "a",
    id,
    fingerprint: new Uint8Array([1]),
    toKind: "endpoint",
    toId: "b",
    body: new Uint8Array([1]),
    bodyEnc: "base64",
    contentType: "application/octet-stream",
    meta: "{}",
    sendAt: T0,
    keep: false,
    ttlSeconds: 60,
    receipt: true,
    ...over,
  };
}

/** Marks the endpoint's pending deliveries as pushed to `connCode` (spec 7.5 step 3). */
export function push(db: DatabaseSync, endpointId: string, connCode: string): void {
  claimDeliveries(db, { endpointId, connCode, limit: 1000 }, T0);
}

/** `endpoint:state:reason` of every delivery of message `seq`, by endpoint id. */
export function deliveryLines(db: DatabaseSync, seq: number): string[] {
  return (db.prepare(
    "SELECT endpoint_id, state, reason FROM deliveries WHERE seq = ? ORDER BY endpoint_id",
  ).all(seq) as { endpoint_id: string; state: string; reason: string }[])
    .map((r) => `${r.endpoint_id}:${r.state}:${r.reason}`);
}

/** `state:reason` of message `seq`, or "gone" when its record is deleted. */
export function messageLine(db: DatabaseSync, seq: number): string {
  const row = db.prepare("SELECT state, reason FROM messages WHERE seq = ?").get(seq) as
    | { state: string; reason: string }
    | undefined;
  return row === undefined ? "gone" : `${row.state}:${row.reason}`;
}

/** `sender>msg:endpoint:state:reason` of every receipt row, oldest first. */
export function receiptLines(db: DatabaseSync): string[] {
  return (db.prepare(
    "SELECT sender_id, msg_id, endpoint_id, state, reason FROM receipts ORDER BY receipt_id",
  ).all() as {
    sender_id: string;
    msg_id: string;
    endpoint_id: string;
    state: string;
    reason: string;
  }[]).map((r) => `${r.sender_id}>${r.msg_id}:${r.endpoint_id}:${r.state}:${r.reason}`);
}

/** Counts rows of `table` matching `where` (a fixed SQL condition written by the test). */
export function countRows(
  db: DatabaseSync,
  table: string,
  where = "1",
  ...params: string[]
): number {
  const row = db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...params) as {
    n: number;
  };
  return row.n;
}

/** The OpError code `fn` throws, or "ok" when it returns. */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof OpError) return err.code;
    throw err;
  }
  return "ok";
}
