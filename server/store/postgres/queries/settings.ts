import type { SettingKey } from "../../queries/settings.ts";
import type { PgReader } from "../op.ts";

const SQL_GET_SETTING = "SELECT value FROM settings WHERE key = $1";

/** One setting, or null when it was never set; the twin of server/store/queries/settings.ts. */
export async function readSetting(r: PgReader, key: SettingKey): Promise<string | null> {
  return (await r.q<{ value: string }>(SQL_GET_SETTING, [key]))[0]?.value ?? null;
}
