/** Keeps the overview's copy of the server's metrics history (a sliding window of samples). */
import type { HistorySample } from "../api/types.ts";

/** Adds `fresh` samples to `kept` (oldest first), dropping repeats and those older than `spanMs`. */
export function mergeSamples(
  kept: readonly HistorySample[],
  fresh: readonly HistorySample[],
  spanMs: number,
): HistorySample[] {
  const last = kept.length === 0 ? -Infinity : kept[kept.length - 1].t;
  const all = [...kept, ...fresh.filter((s) => s.t > last)];
  const newest = all.length === 0 ? 0 : all[all.length - 1].t;
  return all.filter((s) => s.t > newest - spanMs);
}

/** How often the overview polls: the sampling period, within 1 to 10 seconds. */
export function pollPeriod(intervalMs: number): number {
  return Math.min(10_000, Math.max(1000, intervalMs));
}

/** Sums `pick` over the samples (counts per window, e.g. rejected deliveries). */
export function total(
  samples: readonly HistorySample[],
  pick: (s: HistorySample) => number,
): number {
  return samples.reduce((n, s) => n + pick(s), 0);
}

/** Messages in a window from a per-second rate. */
export function perWindow(s: HistorySample, rate: number): number {
  return Math.round(rate * s.window_ms / 1000);
}

/** Rejections by reason over the samples, most frequent first. */
export function rejectionReasons(samples: readonly HistorySample[]): [string, number][] {
  const out = new Map<string, number>();
  for (const s of samples) {
    for (const [r, n] of Object.entries(s.rejected_by_reason)) out.set(r, (out.get(r) ?? 0) + n);
  }
  return [...out].sort((a, b) => b[1] - a[1]);
}
