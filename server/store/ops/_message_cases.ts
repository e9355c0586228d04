// Case tables of `message.submit` shared by messages_test.ts (the SQLite ops) and the store
// contract suite (server/store/contract/, SQLite and PostgreSQL). Not a test file itself.
import { T0 } from "./_testing.ts";
import type { SubmitArgs } from "./messages.ts";

/** `grace_seconds` of the default limits, in ms. */
const GRACE = 60_000;

/** One placement of a direct message's delivery (spec 7.4 step 2), with a 600 s TTL. */
export interface PlacementCase {
  name: string;
  /** The recipient "b" has a live connection. */
  connected?: boolean;
  offlineSince?: number | null;
  keep: boolean;
  want: { msg: string; state: string; reason: string; expireAt: number | null };
  /** `endpoint:state:reason` of the receipts written. */
  receipts: string[];
}

/** spec 7.4 step 2: where a delivery to "b" lands by presence, keep and grace. */
export const PLACEMENT_CASES: readonly PlacementCase[] = [
  {
    name: "connected, not kept",
    connected: true,
    keep: false,
    want: { msg: "dispatched", state: "pending", reason: "", expireAt: null },
    receipts: [],
  },
  {
    name: "connected, kept",
    connected: true,
    keep: true,
    want: { msg: "dispatched", state: "pending", reason: "", expireAt: T0 + 600_000 },
    receipts: [],
  },
  {
    name: "offline, kept",
    offlineSince: T0 - 10 * GRACE,
    keep: true,
    want: { msg: "dispatched", state: "pending", reason: "", expireAt: T0 + 600_000 },
    receipts: [],
  },
  {
    name: "offline within grace",
    offlineSince: T0 - 10_000,
    keep: false,
    want: { msg: "dispatched", state: "pending", reason: "", expireAt: T0 - 10_000 + GRACE },
    receipts: [],
  },
  {
    name: "offline beyond grace",
    offlineSince: T0 - GRACE,
    keep: false,
    want: { msg: "completed", state: "dropped", reason: "offline", expireAt: null },
    receipts: ["b:dropped:offline"],
  },
  {
    name: "never online",
    offlineSince: null,
    keep: false,
    want: { msg: "completed", state: "dropped", reason: "offline", expireAt: null },
    receipts: ["b:dropped:offline"],
  },
];

/**
 * spec 7.3 step 3 refusals, from "a", with endpoints a, b, off (disabled), c and group g1 of
 * b and c.
 */
export const TARGET_CASES: readonly [string, Partial<SubmitArgs>, string][] = [
  ["unknown endpoint", { toId: "nobody" }, "invalid_target"],
  ["disabled endpoint", { toId: "off" }, "endpoint_disabled"],
  ["unknown group", { toKind: "group", toId: "g0" }, "invalid_target"],
  ["not a member", { toKind: "group", toId: "g1" }, "not_member"],
];
