/**
 * A short in-memory history of the server's own figures for the console's live overview
 * (`GET /api/admin/metrics/history`, docs/admin-api.md). Every `intervalMs` (10 s by default) one
 * sample is taken; the last hour is kept. Nothing is stored on disk, so a restart starts empty.
 *
 * Gauges come from where `/metrics` reads them (the broker, the writer, {@linkcode overviewCounts});
 * rates and outcomes count the rows that changed during the sample's window on the read
 * connection: messages by `created_at` (indexed), finished deliveries by `updated_at`. Those
 * times are read when an op is queued, and the op commits a little later, so each window ends
 * {@linkcode HISTORY_SETTLE_MS} before the sample is taken: a row is counted once it has committed.
 */
import type { App } from "../app/app_context.ts";
import type { HistoryGauges, HistorySample, HistoryView } from "./history_schema.ts";

/** Default sampling period. */
export const HISTORY_INTERVAL_MS = 10_000;
/** How far back the history reaches. */
export const HISTORY_SPAN_MS = 3_600_000;
/** How long after its queued time a write is assumed committed (group commits take ms). */
export const HISTORY_SETTLE_MS = 2_000;

// The shapes are declared once, as schemas (history_schema.ts).
export type { HistoryGauges, HistorySample, HistoryView } from "./history_schema.ts";

/** The sampler of one server. */
export interface MetricsHistory {
  /** The samples newer than `since` (all when omitted) and the current gauges. */
  view(since?: number): Promise<HistoryView>;
  /** Takes a sample now (the timer calls this; tests may too). */
  sample(): Promise<HistorySample | null>;
  /** Stops the timer and the writer subscription. */
  close(): void;
}

/** Options of {@linkcode startMetricsHistory}. */
export interface HistoryOptions {
  intervalMs?: number;
  spanMs?: number;
}

/** The `q` quantile (0..1) rank among `n` sorted values, nearest-rank. */
export function quantileRank(n: number, q: number): number {
  return Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
}

/** Reads the gauges of `app` now. */
export async function readGauges(app: App): Promise<HistoryGauges> {
  let online = 0;
  for (const conn of app.conns.all()) {
    if (conn.handshaken && app.conns.isCurrent(conn.endpointId, conn.code)) online++;
  }
  const counts = await app.store.query("admin.overview_counts", {});
  return {
    connections: { ws: app.broker.clientCount("ws"), tcp: app.broker.clientCount("tcp") },
    online,
    pending_deliveries: counts.pending_deliveries,
    scheduled_messages: counts.scheduled_messages,
    writer_queue: app.store.queueLength,
  };
}

/**
 * Starts sampling `app` every `intervalMs`.
 *
 * @example
 * const history = startMetricsHistory(app);
 * history.view().samples; // the last hour, oldest first
 * history.close();
 */
export function startMetricsHistory(app: App, opts: HistoryOptions = {}): MetricsHistory {
  const intervalMs = opts.intervalMs ?? HISTORY_INTERVAL_MS;
  const spanMs = opts.spanMs ?? HISTORY_SPAN_MS;
  const capacity = Math.max(1, Math.ceil(spanMs / intervalMs));
  const samples: HistorySample[] = [];
  let last = app.clock() - HISTORY_SETTLE_MS;
  let commits = 0;
  let commitMsSum = 0;
  let commitMsMax = 0;

  const unsubscribe = app.store.onCommit((info) => {
    if (!info.ok) return;
    commits++;
    commitMsSum += info.ms;
    commitMsMax = Math.max(commitMsMax, info.ms);
  });

  let sampling = false;
  async function sample(): Promise<HistorySample | null> {
    // One at a time: a slow store must not let timer ticks pile up samples of one window.
    if (sampling) return null;
    sampling = true;
    const t = Math.max(app.clock() - HISTORY_SETTLE_MS, last + 1);
    const from = last;
    const windowMs = t - from;
    let s: HistorySample;
    try {
      const counts = await app.store.query("metrics.window_counts", { from, to: t });
      const outcomes = { accepted: 0, expired: 0, dropped: 0, rejected: 0 };
      const byReason: Record<string, number> = {};
      for (const r of counts.outcomes) {
        const n = r.n;
        if (r.state in outcomes) outcomes[r.state as keyof typeof outcomes] += n;
        if (r.state !== "rejected") continue;
        const reason = r.reason || "other";
        byReason[reason] = (byReason[reason] ?? 0) + n;
      }
      const acc = outcomes.accepted;
      const [p50, p99] = acc === 0 ? [null, null] : await app.store.query(
        "metrics.latency_at_ranks",
        { from, to: t, ranks: [quantileRank(acc, 0.5), quantileRank(acc, 0.99)] },
      );
      s = {
        t,
        window_ms: windowMs,
        ...(await readGauges(app)),
        submitted_per_s: counts.submitted / (windowMs / 1000),
        delivered_per_s: acc / (windowMs / 1000),
        outcomes,
        rejected_by_reason: byReason,
        commits,
        commit_ms_avg: commits === 0 ? null : commitMsSum / commits,
        commit_ms_max: commits === 0 ? null : commitMsMax,
        latency_ms_p50: p50,
        latency_ms_p99: p99,
      };
    } catch (err) {
      // A closed or failing read connection: skip this sample, /readyz reports the database.
      app.log.warn("metrics history: sample failed", { error: (err as Error).message });
      return null;
    } finally {
      sampling = false;
    }
    last = t;
    commits = 0;
    commitMsSum = 0;
    commitMsMax = 0;
    samples.push(s);
    if (samples.length > capacity) samples.splice(0, samples.length - capacity);
    return s;
  }

  const timer = setInterval(() => void sample(), intervalMs);
  Deno.unrefTimer(timer);

  return {
    sample,
    async view(since) {
      const gauges = await readGauges(app);
      return {
        interval_ms: intervalMs,
        span_ms: spanMs,
        now: { t: app.clock(), ...gauges },
        samples: since === undefined ? [...samples] : samples.filter((s) => s.t > since),
      };
    },
    close() {
      clearInterval(timer);
      unsubscribe();
    },
  };
}
