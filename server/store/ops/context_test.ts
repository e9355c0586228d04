import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  configure,
  connected,
  DEFAULT_OPS_LIMITS,
  disconnected,
  opsContext,
  resetOpsContext,
} from "./context.ts";

// The Worker-side connection view and limits (spec 7.4, 11.1). These ops run no SQL.

const T0 = 1_750_000_000_000;
const db = new DatabaseSync(":memory:");

Deno.test("configure sets only the limits it is given", () => {
  resetOpsContext();
  const r = configure(db, { graceMs: 5000, recordRetentionDays: 0 }, T0);
  assert.deepEqual(r, { ...DEFAULT_OPS_LIMITS, graceMs: 5000, recordRetentionDays: 0 });
  assert.deepEqual(opsContext.limits, r);
  assert.deepEqual(structuredClone(r), r);
});

Deno.test("configure refuses negative and non-finite limits and keeps the old ones", () => {
  resetOpsContext();
  const cases: Partial<Record<keyof typeof DEFAULT_OPS_LIMITS, number>>[] = [
    { graceMs: -1 },
    { maxPendingPerSender: Number.NaN },
    { maxPendingPerReceiver: Number.POSITIVE_INFINITY },
  ];
  for (const args of cases) {
    assert.throws(() => configure(db, args, T0), RangeError, JSON.stringify(args));
    assert.deepEqual(opsContext.limits, DEFAULT_OPS_LIMITS);
  }
});

Deno.test("an endpoint stays connected while any of its connections is alive", () => {
  resetOpsContext();
  const steps: [op: "up" | "down", conn: string | undefined, want: boolean][] = [
    ["up", "old", true],
    ["up", "new", true], // takeover: the new connection arrives first
    ["down", "old", true], // the old one's close must not mark the endpoint gone
    ["down", "old", true], // a repeated close is harmless
    ["down", "new", false],
    ["up", undefined, true], // without codes every connection counts as one
    ["down", undefined, false],
  ];
  for (const [op, connCode, want] of steps) {
    const fn = op === "up" ? connected : disconnected;
    const r = fn(db, { endpointId: "b", connCode }, T0);
    assert.equal(r.connected, want, `${op} ${connCode}`);
    assert.equal(opsContext.connected.has("b"), want, `${op} ${connCode}`);
  }
  assert.equal(opsContext.connections.size, 0);
});
