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
