import assert from "node:assert/strict";
import { sendTiming } from "./send_options.ts";

Deno.test("sendTiming() sends now as delay 0, a delay in ms, and a future time as send_at_ms", () => {
  const now = 1_750_000_000_000;
  assert.deepEqual(sendTiming("now", null, null, now), { fields: { delay_ms: 0 }, problem: "" });
  assert.deepEqual(sendTiming("delay", 90, null, now), {
    fields: { delay_ms: 90_000 },
    problem: "",
  });
  assert.deepEqual(sendTiming("at", null, now + 5000, now), {
    fields: { send_at_ms: now + 5000 },
    problem: "",
  });
});

Deno.test("sendTiming() refuses a missing or zero delay and a time that is not ahead", () => {
  const now = 1_750_000_000_000;
  assert.equal(sendTiming("delay", null, null, now).problem, "延迟至少 1 秒");
  assert.equal(sendTiming("delay", 0, null, now).problem, "延迟至少 1 秒");
  assert.equal(sendTiming("at", null, null, now).problem, "请选择发送时刻");
  assert.equal(sendTiming("at", null, now, now).problem, "发送时刻必须晚于现在");
});
