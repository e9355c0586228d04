// Rows written straight into a database file, for the tests that start a server on data an older
// build left behind.
import type { DatabaseSync } from "node:sqlite";
import { resetOpsContext } from "../../server/store/ops/context.ts";
import { createEndpoint } from "../../server/store/ops/endpoints.ts";

/**
 * Resets the store's ops context and creates one endpoint per id as the admin would: named after
 * its id, with the given login hash, no talk password and no default delay.
 */
export function seedEndpoints(
  db: DatabaseSync,
  ids: readonly string[],
  loginHash: string,
  now: number,
): void {
  resetOpsContext();
  for (const id of ids) {
    createEndpoint(db, {
      id,
      name: id,
      remark: "",
      source: "admin",
      loginHash,
      talkHash: null,
      defaultDelayMs: 0,
    }, now);
  }
}
