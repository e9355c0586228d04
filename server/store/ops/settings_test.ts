import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { openDb } from "../db.ts";
import { SCHEMA_V1_SQL } from "../schema_v1.ts";
import { deleteSetting, getSetting, setSetting } from "./settings.ts";

function memoryDb(): DatabaseSync {
  const db = openDb(":memory:");
  db.exec(SCHEMA_V1_SQL);
  return db;
}

Deno.test("setSetting() inserts, then replaces the value and updated_at", () => {
  const db = memoryDb();
  try {
    setSetting(db, { key: "registration_enabled", value: "false" }, 100);
    setSetting(db, { key: "registration_enabled", value: "true" }, 200);
    assert.equal(getSetting(db, "registration_enabled"), "true");
    const row = db.prepare("SELECT updated_at FROM settings WHERE key = ?").get(
      "registration_enabled",
    ) as { updated_at: number };
    assert.equal(row.updated_at, 200);
  } finally {
    db.close();
  }
});

Deno.test("deleteSetting() reports whether the setting existed", () => {
  const db = memoryDb();
  try {
    setSetting(db, { key: "registration_code", value: "abc" }, 1);
    assert.equal(deleteSetting(db, { key: "registration_code" }, 2), true);
    assert.equal(deleteSetting(db, { key: "registration_code" }, 3), false);
    assert.equal(getSetting(db, "registration_code"), undefined);
  } finally {
    db.close();
  }
});
