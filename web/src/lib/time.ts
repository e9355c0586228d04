/** Times in the browser's local time zone as `YYYY-MM-DD HH:mm:ss` (spec 2.4). */

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** Formats Unix milliseconds; `null` (unset) becomes "—". */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return "—";
  const date = `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${date} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The date-fns pattern of the same format, for `n-date-picker`. */
export const PICKER_FORMAT = "yyyy-MM-dd HH:mm:ss";

/** Formats a duration in milliseconds the short Chinese way ("1 小时 5 分 3 秒"). */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0 秒";
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [size, unit] of [[86400, "天"], [3600, "小时"], [60, "分"], [1, "秒"]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)} ${unit}`);
      s %= size;
    }
  }
  return parts.length === 0 ? "0 秒" : parts.join(" ");
}

/** Local midnight of the day holding `ms`. */
export function startOfDay(ms: number): number {
  const d = new Date(ms);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
}

/**
 * The time span of a `daterange` pick, as whole local days: from the start of the first day to
 * the start of the day after the last (the API's `to` is exclusive). One day picked twice is
 * that whole day.
 */
export function dayRange(range: readonly [number, number]): { from: number; to: number } {
  const last = new Date(startOfDay(range[1]));
  const next = new Date(last.getFullYear(), last.getMonth(), last.getDate() + 1).getTime();
  return { from: startOfDay(range[0]), to: next };
}

/** `YYYY-MM-DD` of the local day holding `ms` (for addresses). */
export function dayKey(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Local midnight of a `YYYY-MM-DD` day; null when `text` is not one. */
export function parseDayKey(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (m === null) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return d.getMonth() === Number(m[2]) - 1 && d.getDate() === Number(m[3]) ? d.getTime() : null;
}
