import type { DatabaseSync } from "node:sqlite";

const SQL_GET_SETTING = "SELECT value FROM settings WHERE key = ?";

/** Setting keys stored in the `settings` table (spec 7.7). */
export type SettingKey = "admin_password_hash" | "registration_enabled" | "registration_code";

/** Reads one setting, or null when it was never set. */
export function readSetting(db: DatabaseSync, key: SettingKey): string | null {
  const row = db.prepare(SQL_GET_SETTING).get(key) as { value: string } | undefined;
  return row?.value ?? null;
}
