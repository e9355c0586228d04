import assert from "node:assert/strict";
import { dayKey, dayRange, formatDuration, formatTime, parseDayKey } from "./time.ts";

Deno.test("formatTime writes local time as YYYY-MM-DD HH:mm:ss", () => {
  const ms = new Date(2026, 0, 2, 3, 4, 5).getTime();
  assert.equal(formatTime(ms), "2026-01-02 03:04:05");
  assert.equal(formatTime(null), "—");
  assert.equal(formatTime(undefined), "—");
});

Deno.test("formatDuration names days, hours, minutes and seconds", () => {
  assert.equal(formatDuration(0), "0 秒");
  assert.equal(formatDuration(5000), "5 秒");
  assert.equal(formatDuration(3_600_000), "1 小时");
  assert.equal(formatDuration(90_061_000), "1 天 1 小时 1 分 1 秒");
});

Deno.test("dayRange covers whole local days; one day picked twice is that day", () => {
  const day = new Date(2026, 11, 1, 0, 0, 0).getTime();
  const r = dayRange([day, day]);
  assert.equal(r.from, day);
  assert.equal(r.to, new Date(2026, 11, 2).getTime());
  const noon = new Date(2026, 11, 1, 12, 30).getTime();
  assert.deepEqual(dayRange([noon, new Date(2026, 11, 31, 9).getTime()]), {
    from: day,
    to: new Date(2027, 0, 1).getTime(),
  });
});

Deno.test("dayKey and parseDayKey round-trip local days", () => {
  const day = new Date(2026, 1, 28).getTime();
  assert.equal(dayKey(day + 3600_000), "2026-02-28");
  assert.equal(parseDayKey("2026-02-28"), day);
  assert.equal(parseDayKey("2026-02-30"), null);
  assert.equal(parseDayKey("yesterday"), null);
});
