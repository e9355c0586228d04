import assert from "node:assert/strict";
import { T0, testDb } from "./_testing.ts";
import { pruneAudit, recordAuditRow } from "./audit.ts";

const entry = (action: string) => ({
  actor: "admin",
  action,
  target: "door-1",
  result: "ok",
  ip: "203.0.113.7",
});

Deno.test("audit.record stores one row with the writer's clock and returns its growing id", () => {
  const db = testDb();
  try {
    const a = recordAuditRow(db, entry("endpoint.kick"), T0);
    const b = recordAuditRow(db, entry("endpoint.unlock"), T0 + 1);
    assert.ok(b.id > a.id);
    const rows = db.prepare("SELECT * FROM audit_log ORDER BY id").all();
    assert.deepEqual(rows.map((r) => [r.at, r.action, r.target, r.ip]), [
      [T0, "endpoint.kick", "door-1", "203.0.113.7"],
      [T0 + 1, "endpoint.unlock", "door-1", "203.0.113.7"],
    ]);
  } finally {
    db.close();
  }
});

Deno.test("audit.prune deletes only rows older than the cutoff, a batch at a time", () => {
  const db = testDb();
  try {
    for (let i = 0; i < 5; i++) recordAuditRow(db, entry(`a.${i}`), T0 + i);
    assert.deepEqual(pruneAudit(db, { before: T0 + 3, batch: 2 }, T0), { deleted: 2, more: true });
    assert.deepEqual(pruneAudit(db, { before: T0 + 3, batch: 2 }, T0), { deleted: 1, more: false });
    assert.deepEqual(pruneAudit(db, { before: T0 + 3, batch: 2 }, T0), { deleted: 0, more: false });
    const left = db.prepare("SELECT action FROM audit_log ORDER BY id").all().map((r) => r.action);
    assert.deepEqual(left, ["a.3", "a.4"]);
  } finally {
    db.close();
  }
});
