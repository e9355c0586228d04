import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// spec 7.7 settings: admin_password_hash | registration_enabled | registration_code.
const SQL_UPSERT_SETTING = `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
const SQL_DELETE_SETTING = "DELETE FROM settings WHERE key = ?";
const SQL_GET_SETTING = "SELECT value FROM settings WHERE key = ?";

/** Args of {@link setSetting}. */
export interface SetSettingArgs {
  key: string;
  value: string;
}

/** Args of {@link deleteSetting}. */
export interface DeleteSettingArgs {
  key: string;
}

/** Writes one setting, replacing its value and `updated_at`. */
export function setSetting(db: DatabaseSync, args: SetSettingArgs, now: number): void {
  prepareCached(db, SQL_UPSERT_SETTING).run(args.key, args.value, now);
}

/** Deletes one setting; returns whether it existed. */
export function deleteSetting(db: DatabaseSync, args: DeleteSettingArgs, _now: number): boolean {
  return Number(prepareCached(db, SQL_DELETE_SETTING).run(args.key).changes) > 0;
}

/** Reads one setting (any connection, usually the reader); undefined when unset. */
export function getSetting(db: DatabaseSync, key: string): string | undefined {
  const row = prepareCached(db, SQL_GET_SETTING).get(key) as { value: string } | undefined;
  return row?.value;
}

/** The settings ops, merged into the registry in `mod.ts`. */
export const settingsOps = {
  "settings.set": setSetting,
  "settings.delete": deleteSetting,
};
