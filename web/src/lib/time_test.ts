import assert from "node:assert/strict";
import { formatDuration, formatTime } from "./time.ts";

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
