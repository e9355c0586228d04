import { join } from "node:path";

/** The database file inside the data directory (spec 11.2 layout: data/nixmsg.db). */
export function dbPath(dataDir: string): string {
  return join(dataDir, "nixmsg.db");
}

/** Creates the data directory (and its backup folder) when missing. */
export async function ensureDataDir(dataDir: string): Promise<void> {
  await Deno.mkdir(join(dataDir, "backup"), { recursive: true });
}
