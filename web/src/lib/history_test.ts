import assert from "node:assert/strict";
import type { HistorySample } from "../api/types.ts";
import { mergeSamples, perWindow, pollPeriod, rejectionReasons, total } from "./history.ts";

function sample(t: number, extra: Partial<HistorySample> = {}): HistorySample {
  return {
    t,
    window_ms: 10_000,
    connections: { ws: 0, tcp: 0 },
    online: 0,
    pending_deliveries: 0,
    scheduled_messages: 0,
    writer_queue: 0,
    submitted_per_s: 0,
    delivered_per_s: 0,
    outcomes: { accepted: 0, expired: 0, dropped: 0, rejected: 0 },
    rejected_by_reason: {},
    commits: 0,
    commit_ms_avg: null,
    commit_ms_max: null,
    latency_ms_p50: null,
    latency_ms_p99: null,
    ...extra,
  };
}

Deno.test("mergeSamples appends new samples, skips repeats and drops what left the span", () => {
  const kept = [sample(10), sample(20)];
  const merged = mergeSamples(kept, [sample(20), sample(30)], 25);
  assert.deepEqual(merged.map((s) => s.t), [10, 20, 30]);
  assert.deepEqual(mergeSamples(merged, [sample(40)], 25).map((s) => s.t), [20, 30, 40]);
  assert.deepEqual(mergeSamples([], [], 25), []);
});

Deno.test("pollPeriod stays within 1 to 10 seconds", () => {
  assert.equal(pollPeriod(10_000), 10_000);
  assert.equal(pollPeriod(100), 1000);
  assert.equal(pollPeriod(60_000), 10_000);
});

Deno.test("totals, per-window counts and rejection reasons", () => {
  const a = sample(1, { submitted_per_s: 0.5, rejected_by_reason: { queue_full: 1 } });
  const b = sample(2, { rejected_by_reason: { queue_full: 2, endpoint_disabled: 1 } });
  assert.equal(perWindow(a, a.submitted_per_s), 5);
  assert.equal(total([a, b], (s) => perWindow(s, s.submitted_per_s)), 5);
  assert.deepEqual(rejectionReasons([a, b]), [["queue_full", 3], ["endpoint_disabled", 1]]);
});
