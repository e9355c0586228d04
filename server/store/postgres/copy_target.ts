import { COPY_TABLES, type CopyTable, type CopyTarget, type CopyValue } from "../store.ts";
import { execScript, type PgPool, query } from "./sql.ts";

// The PostgreSQL end of `nixmsg store copy` (issue 29 item 4, server/store/copy.ts): rows go in as
// SQLite holds them, ids, seq and receipt_id kept. The quota triggers derive `quota_counts` from
// the copied messages and deliveries as they arrive; `finish` moves the id counters past the copy.

// Column names come from the SQLite schema; only names of this shape are put into SQL.
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** PostgreSQL allows 65,535 parameters per statement. */
const MAX_PARAMS = 60_000;

// The ids SQLite handed out before the copy may be above every copied one (AUTOINCREMENT never
// reuses a deleted id, and SQLite migration 2 restarted its sequences above the time in ms). A
// client may remember them (receipt dedup by id), so a database in use continues above the time
// in ms, as SQLite migration 2 does; an empty one continues above its largest id.
const SQL_FINISH_COUNTERS = `WITH used (lowest) AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM endpoints) OR EXISTS (SELECT 1 FROM messages)
        OR EXISTS (SELECT 1 FROM receipts)
      THEN (extract(epoch FROM clock_timestamp()) * 1000)::bigint ELSE 0 END)
  UPDATE id_counters c SET n = greatest(c.n, used.lowest, CASE c.name
      WHEN 'messages' THEN (SELECT coalesce(max(seq), 0) FROM messages)
      ELSE (SELECT coalesce(max(receipt_id), 0) FROM receipts) END)
  FROM used`;

// The copied audit rows keep their ids; new ones continue above the largest.
const SQL_FINISH_AUDIT_IDS = `SELECT setval(pg_get_serial_sequence('audit_log', 'id'),
  coalesce((SELECT max(id) FROM audit_log), 1), EXISTS (SELECT 1 FROM audit_log))`;

function assertTable(table: string): asserts table is CopyTable {
  if (!(COPY_TABLES as readonly string[]).includes(table)) {
    throw new Error(`Not a table of the copy: ${table}`);
  }
}

/**
 * A {@link CopyTarget} on the store's pool. `close` leaves the pool to the store, which the copy
 * command closes after it.
 */
export function pgCopyTarget(sql: PgPool): CopyTarget {
  return {
    async countRows(table) {
      assertTable(table);
      return (await query<{ n: number }>(sql, `SELECT count(*) AS n FROM ${table}`))[0].n;
    },
    async insertRows(table, columns, rows) {
      assertTable(table);
      for (const c of columns) {
        if (!IDENTIFIER.test(c)) throw new Error(`Not a column name: ${c}`);
      }
      if (rows.length === 0) return;
      const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
      const conn = await sql.reserve();
      try {
        await execScript(conn, "BEGIN");
        for (let i = 0; i < rows.length; i += perStatement) {
          const part = rows.slice(i, i + perStatement);
          const params: CopyValue[] = [];
          const tuples = part.map((row) => {
            const marks = row.map((v) => {
              params.push(v);
              return `$${params.length}`;
            });
            return `(${marks.join(", ")})`;
          });
          const text = `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${tuples.join(", ")}`;
          // Not prepared: the text differs with the chunk's size.
          await conn.unsafe(text, params as never[]);
        }
        await execScript(conn, "COMMIT");
      } catch (err) {
        await execScript(conn, "ROLLBACK").catch(() => {});
        throw err;
      } finally {
        conn.release();
      }
    },
    async finish() {
      await execScript(sql, SQL_FINISH_COUNTERS);
      await execScript(sql, SQL_FINISH_AUDIT_IDS);
      await execScript(sql, "ANALYZE");
    },
    close() {
      return Promise.resolve();
    },
  };
}
