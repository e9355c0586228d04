import type { DeleteSettingArgs, SetSettingArgs } from "../../ops/settings.ts";
import type { PgTx } from "../op.ts";

// spec 7.7 settings; the twin of server/store/ops/settings.ts.

const SQL_UPSERT_SETTING = `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
const SQL_DELETE_SETTING = "DELETE FROM settings WHERE key = $1";

/** `settings.set`: writes one setting, replacing its value and `updated_at`. */
export async function setSetting(t: PgTx, args: SetSettingArgs, now: number): Promise<void> {
  await t.q(SQL_UPSERT_SETTING, [args.key, args.value, now]);
}

/** `settings.delete`: deletes one setting; returns whether it existed. */
export async function deleteSetting(
  t: PgTx,
  args: DeleteSettingArgs,
  _now: number,
): Promise<boolean> {
  return (await t.q(SQL_DELETE_SETTING, [args.key])).count > 0;
}

/** The settings ops. */
export const pgSettingsOps = {
  "settings.set": setSetting,
  "settings.delete": deleteSetting,
};
