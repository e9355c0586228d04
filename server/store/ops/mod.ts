// The writer's op registry (DESIGN "The writer"). Each area adds one object of ops; the Worker
// looks ops up here by name. Keep it a plain spread so the types of every op stay visible.
import { settingsOps } from "./settings.ts";
import { endpointOps } from "./endpoints.ts";
import { contextOps } from "./context.ts";
import { messageOps } from "./messages.ts";
import { deliveryOps } from "./deliveries.ts";
import { receiptOps } from "./receipts.ts";
import { housekeepingOps } from "./housekeeping.ts";
import { recoveryOps } from "./recovery.ts";
import { talkOps } from "./talk.ts";
import { groupOps } from "./groups.ts";
import { invalidateOps } from "./invalidate.ts";
import { adminOps } from "./admin.ts";
import { healthOps } from "./health.ts";
import { auditOps } from "./audit.ts";
import { nodeOps } from "./nodes.ts";
import { webhookOps } from "./webhooks.ts";
import { lockoutOps } from "./lockouts.ts";

/** Every write op, by name. */
export const ops = {
  ...settingsOps,
  ...endpointOps,
  ...contextOps,
  ...messageOps,
  ...deliveryOps,
  ...receiptOps,
  ...housekeepingOps,
  ...recoveryOps,
  ...talkOps,
  ...groupOps,
  ...invalidateOps,
  ...adminOps,
  ...healthOps,
  ...auditOps,
  ...nodeOps,
  ...webhookOps,
  ...lockoutOps,
};

/** The type of {@link ops}; the default registry of `Writer`. */
export type Ops = typeof ops;

/**
 * Ops the writer runs without a SAVEPOINT (see `BatchRunner`): the ones every message goes
 * through. Each throws its `OpError`s (refusals) only before its first write, which
 * `unguarded_test.ts` checks for every refusal; on any other error the runner runs the batch
 * again with every op guarded.
 */
export const unguardedOps: ReadonlySet<keyof Ops> = new Set<keyof Ops>([
  "message.submit",
  "delivery.claim",
  "delivery.ack",
  "receipt.ack",
]);
