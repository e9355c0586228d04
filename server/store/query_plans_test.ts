// Query plans of the statements in server/ (issue 19). Without ANALYZE statistics SQLite picked
// `idx_deliveries_expire (state=?)` for "deliveries of this message still pending" and walked
// every pending delivery of the server on each ack, on the writer and on the main thread. This
// test reads every `const SQL_… = "…"` statement of the server's source, asks SQLite for its plan
// on a migrated database and fails on such a plan, except where walking that index is the point.
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { migrate } from "./migrations.ts";

const SERVER = new URL("../", import.meta.url).pathname;
const STATEMENT = /const (SQL_[A-Z0-9_]+)\s*=\s*(?:`([^`$]*)`|"([^"]*)")/g;
/** Statements that are meant to visit every delivery in a state (startup sweeps, counts). */
const WALKS_A_STATE = new Set([
  "SQL_RECOVER_DELIVERIES",
  "SQL_OVERVIEW",
  // A cluster node's restart and the release of a dead node's marks (issue 30): rare sweeps.
  "SQL_RECOVER_NODE_DELIVERIES",
  "SQL_UNMARK_NODE",
]);
/** Statements and the index their plan must search (not scan the whole table). */
const MUST_SEARCH: Record<string, string> = {
  // The console's overview, every 10 s: only the deliveries that finished in the window.
  SQL_OUTCOMES: "SEARCH deliveries USING INDEX idx_deliveries_finished (updated_at>? AND",
  SQL_LATENCY_AT: "SEARCH deliveries USING INDEX idx_deliveries_finished (updated_at>? AND",
  SQL_ANY_PENDING: "SEARCH deliveries USING INDEX sqlite_autoindex_deliveries_1 (seq=?)",
  SQL_RECALL_PENDING: "SEARCH deliveries USING INDEX sqlite_autoindex_deliveries_1 (seq=?)",
  SQL_PENDING_RECEIPTS: "SEARCH receipts USING INDEX idx_receipts_outbox",
  // Every submit: the key and the record by their unique (sender, id) indexes.
  SQL_SEND_KEY_AND_MESSAGE:
    "SEARCH m USING INDEX sqlite_autoindex_messages_1 (sender_id=? AND id=?)",
};

/** PostgreSQL's statements (server/store/postgres/) are not SQLite's: their plans are not asked. */
const POSTGRES = join(SERVER, "store", "postgres");

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of Deno.readDirSync(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory && path === POSTGRES) continue;
    if (e.isDirectory) sourceFiles(path, out);
    else if (path.endsWith(".ts") && !path.endsWith("_test.ts")) out.push(path);
  }
  return out;
}

Deno.test("statements search the index meant for them, never every pending delivery", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "plans.db");
    await migrate(path, { backupDir: join(dir, "backup") });
    const db = new DatabaseSync(path);
    const bad: string[] = [];
    const found = new Set<string>();
    let checked = 0;
    for (const file of sourceFiles(SERVER)) {
      for (const m of Deno.readTextFileSync(file).matchAll(STATEMENT)) {
        const sql = (m[2] ?? m[3]).trim();
        if (!/^(SELECT|UPDATE|DELETE|INSERT|WITH)\b/i.test(sql)) continue;
        // `?N` parameters count once each, up to the highest N; bare `?` count one by one.
        const numbered = [...sql.matchAll(/\?(\d+)/g)].map((n) => Number(n[1]));
        const params = numbered.length > 0
          ? Math.max(...numbered)
          : (sql.match(/\?/g) ?? []).length;
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array(params).fill(1)) as {
          detail: string;
        }[]).map((r) => r.detail);
        checked++;
        const walks = plan.some((d) => d.includes("idx_deliveries_expire (state=?)"));
        if (walks && !WALKS_A_STATE.has(m[1])) bad.push(`${m[1]} (${file}): ${plan.join("; ")}`);
        const must = MUST_SEARCH[m[1]];
        if (must !== undefined) {
          found.add(m[1]);
          if (!plan.some((d) => d.includes(must))) bad.push(`${m[1]}: ${plan.join("; ")}`);
        }
      }
    }
    db.close();
    assert.ok(checked > 100, `only ${checked} statements found: did the pattern break?`);
    assert.deepEqual(bad, []);
    assert.deepEqual([...found].sort(), Object.keys(MUST_SEARCH).sort(), "every listed statement");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
