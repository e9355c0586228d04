/**
 * The live overview's figures (`GET /api/admin/metrics/history`), declared once: the JSON Schema
 * the OpenAPI document publishes as `MetricsHistory`, the types the sampler (history.ts) builds,
 * and, generated from the document, the console's types.
 */
import { type Static, Type } from "@sinclair/typebox";
import { closed, countsByKey, nonNegInt, numOrNull, timeMs } from "../http/json_schema.ts";

const GAUGES = {
  connections: closed({ ws: nonNegInt, tcp: nonNegInt }),
  online: nonNegInt,
  pending_deliveries: nonNegInt,
  scheduled_messages: nonNegInt,
  writer_queue: nonNegInt,
};

/** The figures that are true at one instant. */
export const HistoryGaugesSchema = closed(GAUGES);

/**
 * One sample: what happened during the window (`t - window_ms`, `t`], and the gauges read when
 * the sample was taken.
 */
export const HistorySampleSchema = closed({
  ...GAUGES,
  t: timeMs,
  window_ms: nonNegInt,
  submitted_per_s: Type.Number(),
  delivered_per_s: Type.Number(),
  outcomes: closed({
    accepted: nonNegInt,
    expired: nonNegInt,
    dropped: nonNegInt,
    rejected: nonNegInt,
  }),
  rejected_by_reason: countsByKey,
  commits: nonNegInt,
  commit_ms_avg: numOrNull,
  commit_ms_max: numOrNull,
  latency_ms_p50: numOrNull,
  latency_ms_p99: numOrNull,
});

/** What the route answers: the samples newer than `since`, oldest first, and the gauges now. */
export const HistoryViewSchema = closed({
  interval_ms: nonNegInt,
  span_ms: nonNegInt,
  now: closed({ ...GAUGES, t: timeMs }),
  samples: Type.Array(HistorySampleSchema),
});

export type HistoryGauges = Static<typeof HistoryGaugesSchema>;
export type HistorySample = Static<typeof HistorySampleSchema>;
export type HistoryView = Static<typeof HistoryViewSchema>;
