import assert from "node:assert/strict";
import { T0, testDb } from "../ops/_testing.ts";
import { recordAuditRow } from "../ops/audit.ts";
import { type AuditFilter, listAudit } from "./audit.ts";

Deno.test("listAudit() lists newest first and combines time, actor, action, target and result", () => {
  const db = testDb();
  try {
    const rows: [string, string, string, string][] = [
      ["admin", "endpoint.kick", "door-1", "ok"],
      ["token:billing", "endpoint.disable", "door-2", "ok"],
      ["cli", "admin.set_password", "", "ok"],
      ["admin", "group.create", "g1", "id_taken"],
      ["system", "lockout.start", "door-1", "login/endpoint"],
    ];
    const ids = rows.map(([actor, action, target, result], i) =>
      recordAuditRow(db, { actor, action, target, result, ip: "" }, T0 + i * 1000).id
    );
    const list = (f: AuditFilter, before: number | null = null, limit = 10) =>
      listAudit(db, f, before, limit).map((r) => r.id);
    assert.deepEqual(list({}), [...ids].reverse());
    assert.deepEqual(list({ actor: "admin" }), [ids[3], ids[0]]);
    assert.deepEqual(list({ action: "endpoint" }), [ids[1], ids[0]], "a family prefix");
    assert.deepEqual(list({ action: "endpoint.kick" }), [ids[0]]);
    assert.deepEqual(list({ action: "endpoint.k" }), [], "not a bare text prefix");
    assert.deepEqual(list({ target: "door-1" }), [ids[4], ids[0]]);
    assert.deepEqual(list({ result: "id_taken" }), [ids[3]]);
    assert.deepEqual(list({ from: T0 + 1000, to: T0 + 3000 }), [ids[2], ids[1]]);
    assert.deepEqual(list({ actor: "admin", target: "door-1" }), [ids[0]]);
    assert.deepEqual(list({}, ids[3], 2), [ids[2], ids[1]], "the cursor is the last id seen");
    const [first] = listAudit(db, {}, null, 1);
    assert.deepEqual(Object.keys(first).sort(), [
      "action",
      "actor",
      "at",
      "id",
      "ip",
      "result",
      "target",
    ]);
  } finally {
    db.close();
  }
});
