import { DatabaseSync } from "node:sqlite";
import { ARGON2_VERSION, hostAddonPackage } from "../auth/argon2_addon.ts";
import { VERSION } from "../version.ts";

/** The SQLite library version that node:sqlite links. */
export function sqliteVersion(): string {
  const db = new DatabaseSync(":memory:");
  try {
    const row = db.prepare("SELECT sqlite_version() AS v").get() as { v: string };
    return row.v;
  } finally {
    db.close();
  }
}

/** The lines `nixmsg version` prints: ours first, then each component's. */
export function versionLines(): string[] {
  return [
    `nixmsg ${VERSION}`,
    `deno ${Deno.version.deno}`,
    `v8 ${Deno.version.v8}`,
    `sqlite ${sqliteVersion()}`,
    `argon2 @node-rs/argon2 ${ARGON2_VERSION} (native addon ${hostAddonPackage()})`,
  ];
}
