// The PostgreSQL op registry: one async op for every op of server/store/ops/mod.ts, same name,
// same argument and result types. The type of `pgOps` makes the compiler prove it.
import type { OpImplementations } from "../../store.ts";
import type { PgTx } from "../op.ts";
import { pgSettingsOps } from "./settings.ts";
import { pgEndpointOps } from "./endpoints.ts";
import { pgContextOps } from "./context.ts";
import { pgMessageOps } from "./messages.ts";
import { pgDeliveryOps } from "./deliveries.ts";
import { pgReceiptOps } from "./receipts.ts";
import { pgHousekeepingOps } from "./housekeeping.ts";
import { pgRecoveryOps } from "./recovery.ts";
import { pgTalkOps } from "./talk.ts";
import { pgGroupOps } from "./groups.ts";
import { pgInvalidateOps } from "./invalidate.ts";
import { pgAdminOps } from "./admin.ts";
import { pgHealthOps } from "./health.ts";
import { pgNodeOps } from "./nodes.ts";
import { pgAuditOps } from "./audit.ts";
import { pgWebhookOps } from "./webhooks.ts";
import { pgLockoutOps } from "./lockouts.ts";

/** The PostgreSQL twin of `Ops`: every op, checked against its SQLite signature. */
export type PgOps = OpImplementations<PgTx>;

/** Every PostgreSQL write op, by name. */
export const pgOps: PgOps = {
  ...pgSettingsOps,
  ...pgEndpointOps,
  ...pgContextOps,
  ...pgMessageOps,
  ...pgDeliveryOps,
  ...pgReceiptOps,
  ...pgHousekeepingOps,
  ...pgRecoveryOps,
  ...pgTalkOps,
  ...pgGroupOps,
  ...pgInvalidateOps,
  ...pgAdminOps,
  ...pgHealthOps,
  ...pgNodeOps,
  ...pgAuditOps,
  ...pgWebhookOps,
  ...pgLockoutOps,
};
