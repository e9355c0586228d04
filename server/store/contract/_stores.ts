// The contract suite's two stores (issue 29): the SAME cases run against the SQLite ops (an
// in-memory database, through the real `BatchRunner`, one batch per op) and the PostgreSQL ops
// (a real PostgreSQL, through the real `PgWriter`). A case sees only this interface: ops by name
// with an injected clock, fixture rows, and plain SELECTs written with `?` placeholders in the SQL
// both engines accept. Not a test file itself.
import type { DatabaseSync } from "node:sqlite";
import { BatchRunner } from "../batch.ts";
import { fromWireError, type OpArgs, OpError, type OpResult } from "../op.ts";
import { type Ops, ops, unguardedOps } from "../ops/mod.ts";
import { addEndpoint, addGroup, type EndpointFixture, T0, testDb } from "../ops/_testing.ts";
import { pgOps } from "../postgres/ops/mod.ts";
import { pgQueries } from "../postgres/queries/mod.ts";
import { readerOn } from "../postgres/op.ts";
import type { QueryArgs, QueryResult } from "../query.ts";
import { type Queries, queries } from "../queries/mod.ts";
import { PgWriter } from "../postgres/writer.ts";
import { pgIgnored, pgTestDb } from "../postgres/_testing.ts";
import { query } from "../postgres/sql.ts";

export { T0 } from "../ops/_testing.ts";
export type { EndpointFixture } from "../ops/_testing.ts";

/** What a contract case works with. */
export interface ContractStore {
  readonly kind: "sqlite" | "postgres";
  /** Runs one op in a batch of its own at `now` (default T0); rejects with its OpError. */
  run<K extends keyof Ops & string>(
    op: K,
    args: OpArgs<Ops[K]>,
    now?: number,
  ): Promise<OpResult<Ops[K]>>;
  /** The OpError code of the op, or "ok". */
  codeOf<K extends keyof Ops & string>(op: K, args: OpArgs<Ops[K]>, now?: number): Promise<string>;
  /** Runs one read query (the SQLite store's reader, or the PostgreSQL pool). */
  query<K extends keyof Queries & string>(
    name: K,
    args: QueryArgs<Queries[K]>,
  ): Promise<QueryResult<Queries[K]>>;
  /** An endpoint row; offline since T0 unless told otherwise (as `ops/_testing.ts`). */
  addEndpoint(id: string, o?: EndpointFixture): Promise<void>;
  /** A group owned by `members[0]`; member i joined at `joinedAt + i`. */
  addGroup(id: string, members: string[], joinedAt?: number): Promise<void>;
  /** Rows of a SELECT written with `?` placeholders; integers come back as numbers. */
  rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** Runs a fixture statement (UPDATE/DELETE) written with `?` placeholders. */
  exec(sql: string, ...params: unknown[]): Promise<void>;
  close(): Promise<void>;
}

function sqliteStore(): Promise<ContractStore> {
  const db: DatabaseSync = testDb();
  const runner = new BatchRunner(db, ops, unguardedOps);
  let next = 1;
  const store: ContractStore = {
    kind: "sqlite",
    run(op, args, now = T0) {
      const id = next++;
      const r = runner.run([[id, op, args, now]]);
      if (!r.ok) return Promise.reject(new OpError("busy", undefined, r.error));
      const [, ok, value] = r.results[0];
      if (ok) return Promise.resolve(value as never);
      return Promise.reject(fromWireError(value, op));
    },
    codeOf: (op, args, now) => codeOfRun(() => store.run(op, args, now)),
    query(name, args) {
      try {
        const fn = queries[name] as unknown as (db: DatabaseSync, a: unknown) => never;
        // node:sqlite rows have no prototype; the server never looks, the assertions would.
        return Promise.resolve(structuredClone(fn(db, args)));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    addEndpoint(id, o) {
      addEndpoint(db, id, o);
      return Promise.resolve();
    },
    addGroup(id, members, joinedAt) {
      addGroup(db, id, members, joinedAt);
      return Promise.resolve();
    },
    rows<T>(sql: string, ...params: unknown[]) {
      return Promise.resolve(
        db.prepare(sql).all(...(params as (string | number | null)[])).map((r) => ({
          ...r,
        })) as T[],
      );
    },
    exec(sql, ...params) {
      db.prepare(sql).run(...(params as (string | number | null)[]));
      return Promise.resolve();
    },
    close() {
      db.close();
      return Promise.resolve();
    },
  };
  return Promise.resolve(store);
}

async function postgresStore(): Promise<ContractStore> {
  const pg = await pgTestDb();
  let now = T0;
  const writer = new PgWriter(pg.sql, pgOps, pg.ctx, { clock: () => now });
  const reader = readerOn(pg.sql);
  const dollar = (sql: string) => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  };
  const store: ContractStore = {
    kind: "postgres",
    run(op, args, at = T0) {
      now = at;
      return writer.run(op, args) as never;
    },
    codeOf: (op, args, at) => codeOfRun(() => store.run(op, args, at)),
    query(name, args) {
      const fn = pgQueries[name] as unknown as (r: typeof reader, a: unknown) => Promise<never>;
      return fn(reader, args);
    },
    async addEndpoint(id, o = {}) {
      await query(
        pg.sql,
        `INSERT INTO endpoints (id, name, login_hash, created_at, enabled, online_since,
          offline_since, talk_hash, talk_version, session_hash)
          VALUES ($1, $2, 'x', 0, $3, $4, $5, $6, $7, $8)`,
        [
          id,
          o.name ?? "",
          o.enabled === false ? 0 : 1,
          o.onlineSince ?? null,
          o.offlineSince === undefined ? T0 : o.offlineSince,
          o.talkHash ?? null,
          o.talkVersion ?? 0,
          o.sessionHash ?? null,
        ],
      );
    },
    async addGroup(id, members, joinedAt = 0) {
      await query(
        pg.sql,
        "INSERT INTO groups (id, name, owner_id, created_at) VALUES ($1, $1, $2, 0)",
        [
          id,
          members[0],
        ],
      );
      for (const [i, m] of members.entries()) {
        await query(
          pg.sql,
          "INSERT INTO group_members (group_id, endpoint_id, joined_at) VALUES ($1, $2, $3)",
          [id, m, joinedAt + i],
        );
      }
    },
    async rows<T>(sql: string, ...params: unknown[]) {
      return (await query<T>(pg.sql, dollar(sql), params)).map((r) => ({ ...r }));
    },
    async exec(sql, ...params) {
      await query(pg.sql, dollar(sql), params);
    },
    async close() {
      await writer.close();
      await pg.drop();
    },
  };
  return store;
}

async function codeOfRun(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof OpError) return err.code;
    throw err;
  }
  return "ok";
}

/**
 * Registers `fn` once per store: `[sqlite] name` and `[postgres] name`. The PostgreSQL run is
 * ignored, saying why, only when no test PostgreSQL is configured (NIXMSG_TEST_POSTGRES_URL).
 */
export function contractTest(name: string, fn: (s: ContractStore) => Promise<void>): void {
  const stores = [["sqlite", sqliteStore, false], [
    "postgres",
    postgresStore,
    pgIgnored(),
  ]] as const;
  for (const [kind, open, ignore] of stores) {
    Deno.test({
      name: `[${kind}] ${name}`,
      ignore,
      fn: async () => {
        const s = await open();
        try {
          await fn(s);
        } finally {
          await s.close();
        }
      },
    });
  }
}

/** `endpoint:state:reason` of every delivery of message `seq`, by endpoint id. */
export async function deliveryLines(s: ContractStore, seq: number): Promise<string[]> {
  const rows = await s.rows<{ endpoint_id: string; state: string; reason: string }>(
    "SELECT endpoint_id, state, reason FROM deliveries WHERE seq = ? ORDER BY endpoint_id",
    seq,
  );
  return rows.map((r) => `${r.endpoint_id}:${r.state}:${r.reason}`);
}

/** `state:reason` of message `seq`, or "gone" when its record is deleted. */
export async function messageLine(s: ContractStore, seq: number): Promise<string> {
  const rows = await s.rows<{ state: string; reason: string }>(
    "SELECT state, reason FROM messages WHERE seq = ?",
    seq,
  );
  return rows.length === 0 ? "gone" : `${rows[0].state}:${rows[0].reason}`;
}

/** `sender>msg:endpoint:state:reason` of every receipt row, oldest first. */
export async function receiptLines(s: ContractStore): Promise<string[]> {
  const rows = await s.rows<{
    sender_id: string;
    msg_id: string;
    endpoint_id: string;
    state: string;
    reason: string;
  }>("SELECT sender_id, msg_id, endpoint_id, state, reason FROM receipts ORDER BY receipt_id");
  return rows.map((r) => `${r.sender_id}>${r.msg_id}:${r.endpoint_id}:${r.state}:${r.reason}`);
}

/** Rows of `table` matching `where` (a fixed condition written by the test). */
export async function countRows(
  s: ContractStore,
  table: string,
  where = "1 = 1",
  ...params: unknown[]
): Promise<number> {
  const rows = await s.rows<{ n: number }>(
    `SELECT count(*) AS n FROM ${table} WHERE ${where}`,
    ...params,
  );
  return Number(rows[0].n);
}

/** The trigger-kept quota count (migration 4 / PostgreSQL migration 1). */
export async function quota(
  s: ContractStore,
  kind: "sender" | "receiver",
  id: string,
): Promise<number> {
  const rows = await s.rows<{ n: number }>(
    "SELECT n FROM quota_counts WHERE kind = ? AND id = ?",
    kind,
    id,
  );
  return rows.length === 0 ? 0 : Number(rows[0].n);
}
