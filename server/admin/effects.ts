/**
 * The live side of the admin's writes: after an op commits, receipts and `revoked` frames go
 * through the messaging runtime (spec 7.6) and group events to the online members (spec 6.7,
 * shared with the MQTT group frames).
 */
import type { App } from "../app/app_context.ts";
import type { Revoked } from "../store/ops/invalidate.ts";
import type { ReceiptRow } from "../store/ops/receipts.ts";

export { announceAdded, applyGroupChange, notifyGroup } from "../app/handlers/groups.ts";

/** Receipts and revocations of a committed op. */
export interface Voids {
  readonly receipts: readonly ReceiptRow[];
  readonly revoked: readonly Revoked[];
}

/** Hands a committed op's receipts and `revoked` notices to the messaging runtime. */
export function applyVoids(app: App, v: Voids): void {
  if (v.receipts.length === 0 && v.revoked.length === 0) return;
  app.messaging.apply({ receipts: v.receipts, revoked: v.revoked });
}
