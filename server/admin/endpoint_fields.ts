/**
 * Field rules of admin provisioning (spec 8; PRD F01 is not available, see docs/admin-api.md
 * "Endpoints"). Creation shares `validateNewEndpoint` with registration (spec 6.9) and adds the
 * admin-only fields: remark and default delay.
 */
import { randomId } from "../auth/generate.ts";
import type { Store } from "../store/store.ts";

/** Remarks hold at most 256 characters. */
export const REMARK_MAX = 256;
/** Generated login passwords have 20 characters, like the admin password (spec 8). */
export const GENERATED_PASSWORD_LENGTH = 20;

/** spec 6.6: a default delay is at most `max_schedule_seconds`. */
export function maxDelayMs(maxScheduleSeconds: number): number {
  return maxScheduleSeconds * 1000;
}

/**
 * A fresh `e_` + 8 character id that exists neither in the database nor in `reserved` (36^8
 * ids: a retry is rare, two are rarer still).
 */
export async function generateEndpointId(
  store: Pick<Store, "query">,
  reserved: ReadonlySet<string> = new Set(),
): Promise<string> {
  for (;;) {
    const id = randomId("e", 8);
    if (!reserved.has(id) && !(await store.query("endpoint.exists", { id }))) return id;
  }
}
